/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * Objects shared by the files of gdrhook.ko.
 *
 * Ownership, in one place:
 *
 *   struct gdrhook_file   one per open of /dev/gdrhook. Holds the handle
 *                         table (handle -> pin), the per-file limits and
 *                         the revocation event queue. Reference counted:
 *                         the open file holds one reference and every pin
 *                         holds one, so a callback that arrives after
 *                         close() still has a queue to write into.
 *
 *   struct gdrhook_pin    one pinned range. Reachable two ways: from its
 *                         file's handle table (what user space names) and
 *                         from the global id table (what the NVIDIA free
 *                         callback and the dma-buf move_notify name).
 *                         Callbacks get the id, never a pointer, so a
 *                         callback that arrives late finds nothing. A
 *                         callback that finds the pin counts itself in
 *                         pin->callbacks, and the pin is only torn down
 *                         once its id is gone and that count is 0: no
 *                         callback outlives UNPIN or close().
 *
 * Who releases the driver-side pin is decided by one atomic state
 * transition (see enum gdrhook_pin_state_k below); whoever wins it owns
 * the teardown, so an explicit unpin and a concurrent callback can never
 * both free.
 */
#ifndef GDRHOOK_H
#define GDRHOOK_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/seq_file.h>
#include <linux/sysfs.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "include/uapi/gdrhook_ioctl.h"

struct cred;
struct dma_buf;
struct dma_buf_attachment;
struct file;
struct gdrhook_host_pages;
struct mm_struct;
struct nvidia_p2p_dma_mapping;
struct nvidia_p2p_page_table;
struct pci_dev;
struct poll_table_struct;
struct sg_table;
struct user_struct;

/* ---- module parameters (main.c) ---- */
extern unsigned int gdrhook_max_handles_per_file;
extern unsigned long long gdrhook_max_pinned_bytes_per_file;
extern unsigned long long gdrhook_max_pinned_pages_per_user;
extern bool gdrhook_allow_unprivileged_get_pages;
extern unsigned int gdrhook_event_queue_len;
extern bool gdrhook_dmabuf_dynamic;

/* ---- counters (stats.c), exported read-only in debugfs ---- */
struct gdrhook_stats {
	atomic64_t pins_live;
	atomic64_t pins_total;
	atomic64_t callbacks;       /* NVIDIA free callbacks + move_notify */
	atomic64_t late_callbacks;  /* ... that named an id already gone */
	atomic64_t revocations;     /* callbacks that revoked a live pin */
	atomic64_t events_dropped;
	atomic64_t files_open;
	atomic64_t files_live;      /* file objects not yet freed */
	atomic64_t pinned_bytes;    /* the sum of every file's pinned_bytes */
};

extern struct gdrhook_stats gdrhook_stats;
int gdrhook_stats_init(void);
void gdrhook_stats_exit(void);
/* The same counters, read-only to everyone, in sysfs on the device. */
extern const struct attribute_group *gdrhook_stats_groups[];

/* ---- revocation event queue (events.c) ---- */
struct gdrhook_events {
	spinlock_t lock;    /* the ring and its counters; taken in callbacks */
	wait_queue_head_t wait;
	struct gdrhook_event *ring;
	u32 cap;
	u32 head;    /* next to read */
	u32 count;
	u64 dropped; /* lost since the last read, reported as OVERFLOW */
};

int gdrhook_events_init(struct gdrhook_events *ev, u32 cap);
void gdrhook_events_free(struct gdrhook_events *ev);
void gdrhook_events_post(struct gdrhook_events *ev,
			 const struct gdrhook_event *e);
ssize_t gdrhook_events_read(struct gdrhook_events *ev, char __user *buf,
			    size_t len, bool nonblock);
__poll_t gdrhook_events_poll(struct gdrhook_events *ev, struct file *filp,
			     struct poll_table_struct *pt);

/* ---- per-open-file state (pin_table.c) ---- */
struct gdrhook_file {
	struct kref ref;
	struct mm_struct *mm;    /* the opener's, kept (mmgrab) until the file goes */
	struct pid *opener;      /* the opening process, for fdinfo */
	kuid_t opener_uid;       /* the user its pins are charged to */
	const struct cred *cred; /* the opener's, counted: keeps user */
	/* The opener's user: its locked_vm pays for host pins. */
	struct user_struct *user;
	bool ipc_lock_exempt;    /* the opener had CAP_IPC_LOCK (pin_account.c) */
	u64 id;                  /* unique while the module is loaded, for fdinfo */
	struct mutex lock;       /* handle table and the two totals below */
	struct xarray handles;   /* u32 handle -> struct gdrhook_pin * */
	u32 next_handle;         /* cyclic allocation: handles are not reused soon */
	u64 nr_handles;
	u64 pinned_bytes;
	struct gdrhook_events events;
};

/*
 * Life of a pin. PINNING: the backend is pinning; LIVE: published;
 * UNPINNING: an explicit unpin (or close) owns the teardown; REVOKED: a
 * callback won, the driver or exporter has taken the memory back.
 * Transitions are cmpxchg only: PINNING->LIVE (pin done), PINNING->REVOKED
 * and LIVE->REVOKED (callback), LIVE->UNPINNING (unpin).
 */
enum gdrhook_pin_state_k {
	GDRHOOK_PIN_PINNING = 0,
	GDRHOOK_PIN_LIVE,
	GDRHOOK_PIN_UNPINNING,
	GDRHOOK_PIN_REVOKED,
};

struct gdrhook_pin {
	struct kref ref;
	atomic_t state;             /* enum gdrhook_pin_state_k */
	/*
	 * Held by the backend from before it registers a callback until it
	 * has copied what it needs from the driver's answer, and by a
	 * callback around its teardown: a callback arriving during PIN waits
	 * until PIN is done reading the table the callback will free.
	 */
	struct mutex lock;
	u32 callbacks;              /* running callbacks; under the id table's lock */
	/* What pin_account.c charged the file's opener, given back once. */
	u64 charged_pages;          /* to the per-user cap */
	u64 memlock_pages;          /* to the opener's user's locked_vm */
	u32 id;                     /* global, what callbacks receive */
	u32 handle;                 /* per file, what user space receives */
	struct gdrhook_file *file;  /* counted reference */
	const struct gdrhook_backend_ops *backend;

	/* What PIN asked for; immutable once published. */
	u32 flags;
	u64 addr;
	u64 length;
	u64 user_tag;
	u64 page_size;
	u64 page_count;
	u64 pinned_bytes;
	/*
	 * Bus addresses, copied at pin time so that GET_PAGES never reads a
	 * driver structure a callback may be freeing at the same moment.
	 */
	u64 *bus_addrs;

	struct pci_dev *peer;       /* counted reference, or NULL */

	union {
		struct {
			struct nvidia_p2p_page_table *page_table;
			struct nvidia_p2p_dma_mapping *dma_map;
			bool holds_driver; /* counted in the nv-p2p users */
			/* Tegra: get_pages succeeded, so its callback will run
			 * once, and completes callback_done as its last act;
			 * table_freed (under lock): it handed the pages back.
			 */
			bool callback_owed;
			bool table_freed;
			struct completion callback_done;
		} nv;
		struct {
			struct dma_buf *dmabuf;
			struct dma_buf_attachment *attach;
			struct sg_table *sgt;
			bool dynamic;
		} db;
		struct gdrhook_host_pages *hp; /* host_pages.c */
	};
};

/*
 * A backend pins and releases one kind of memory. pin() fills page_size,
 * page_count, bus_addrs and pinned_bytes (what the driver or exporter
 * actually holds pinned, what the user is charged); when it fails it
 * leaves in the pin whatever it had got. release() lets go of whatever the
 * pin holds, after a failed pin() as after a successful one, and is only
 * called once no callback can reach the pin any more. It is told whether a
 * callback already revoked the pin, because for nv-p2p the driver then
 * owns the page table and nvidia_p2p_put_pages must not be called; dma-buf
 * resources are released either way.
 */
struct gdrhook_pin_req_k;

struct gdrhook_backend_ops {
	const char *name;
	/*
	 * It pins pages of the process (charged to its locked memory before
	 * pin() sizes anything by the request), not GPU memory.
	 */
	bool host_memory;
	int (*pin)(struct gdrhook_pin *pin, const struct gdrhook_pin_req_k *req);
	void (*release)(struct gdrhook_pin *pin, bool revoked);
};

/* PIN request as the ioctl layer validated it. */
struct gdrhook_pin_req_k {
	u32 flags;
	u64 addr;
	u64 length;
	int dmabuf_fd;
	struct pci_dev *peer;       /* borrowed; the pin takes its own ref */
};

extern const struct gdrhook_backend_ops gdrhook_backend_nvp2p;
extern const struct gdrhook_backend_ops gdrhook_backend_dmabuf;

/* nv-p2p symbol resolution (nvp2p_driver.c) */
u32 gdrhook_nvp2p_features(void); /* GDRHOOK_FEATURE_NVP2P* now usable */
void gdrhook_nvp2p_exit(void);
/* nv-p2p PIN's address and length are multiples of this (the flavour's). */
extern const u64 gdrhook_nvp2p_align;

struct gdrhook_file *gdrhook_file_create(void);
void gdrhook_file_put(struct gdrhook_file *f);
void gdrhook_file_release_all(struct gdrhook_file *f);
void gdrhook_file_show(struct seq_file *m, struct gdrhook_file *f);

/*
 * Pins and publishes; on success fills reply's handle, page_size and
 * page_count (the pin may be unpinned by another thread as soon as it is
 * published, so nothing is handed back by pointer).
 */
int gdrhook_pin_create(struct gdrhook_file *f,
		       const struct gdrhook_backend_ops *backend,
		       const struct gdrhook_pin_req_k *req, u64 user_tag,
		       struct gdrhook_ioc_pin *reply);
int gdrhook_pin_unpin(struct gdrhook_file *f, u64 handle);
struct gdrhook_pin *gdrhook_pin_lookup(struct gdrhook_file *f, u64 handle);
void gdrhook_pin_put(struct gdrhook_pin *pin);

/*
 * A backend's callback brackets its work with these: begin() finds the
 * pin by the id it registered and counts the callback in it (NULL when
 * the id is gone: a late callback); end() uncounts it, after which the
 * callback must not touch the pin. The pair is also an SRCU read section,
 * which module unload waits for.
 */
struct gdrhook_pin *gdrhook_callback_begin(u32 id, int *srcu_idx);
void gdrhook_callback_end(struct gdrhook_pin *pin, int srcu_idx);
/*
 * The callback side of the state machine: returns true when the caller
 * won the pin and must now let the driver side go. A pin that was already
 * published gets an event of event_type queued to its file; one still
 * being pinned makes PIN fail with EAGAIN instead.
 */
bool gdrhook_pin_revoke(struct gdrhook_pin *pin, u32 event_type);

int gdrhook_pin_table_init(void);
void gdrhook_pin_table_exit(void);

/* per-user cap on pinned pages (user_quota.c); ENOSPC over the cap */
int gdrhook_quota_charge(kuid_t uid, u64 pages);
void gdrhook_quota_uncharge(kuid_t uid, u64 pages);
void gdrhook_quota_exit(void);

/*
 * The one accounting path of every pin (pin_account.c): charges the file's
 * opener for pages (the per-user cap, ENOSPC past it; for host memory
 * also its user's locked memory, ENOMEM past RLIMIT_MEMLOCK), all or
 * nothing; uncharge gives back whatever was charged, once.
 */
int gdrhook_pin_charge(struct gdrhook_pin *pin, u64 pages);
void gdrhook_pin_uncharge(struct gdrhook_pin *pin);

/* Any errno a driver or exporter returned, as user space may see it. */
long gdrhook_user_errno(long err);

/* ioctl.c */
long gdrhook_ioctl(struct file *filp, unsigned int cmd, unsigned long arg);

#endif /* GDRHOOK_H */
