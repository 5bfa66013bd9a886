// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Pin objects, the per-file handle table, and the global id
 * table through which callbacks find a pin.
 *
 * Two tables, two jobs:
 *  - f->handles (under f->lock, a mutex): what user space names. A handle
 *    is reserved before the backend pins (so the limits are enforced
 *    before anything is pinned) and published only once the pin is LIVE.
 *  - gdrhook_ids (under its xa_lock, a spinlock): what callbacks name.
 *    The id is allocated before the backend pins because the driver may
 *    call back as soon as it has registered the callback.
 * Neither lock is ever held across a call into a backend, so a driver
 * that calls back while we are inside it cannot deadlock against us.
 *
 * Tearing a pin down (UNPIN, close, a failed PIN) always goes: settle the
 * state (whoever wins the state machine owns the driver side), retire the
 * id, wait until no callback counts itself in the pin, then let the
 * backend release. So when UNPIN or close() returns, no callback is still
 * working on any of their pins, and the pin and its file are only ever
 * freed by their owner, never from inside a callback.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/pci.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/srcu.h>

#include "gdrhook.h"

static DEFINE_XARRAY_ALLOC1(gdrhook_ids);
static u32 gdrhook_next_id;
static atomic64_t gdrhook_next_file_id = ATOMIC64_INIT(0);
/* Woken whenever a callback stops counting itself in a pin. */
static DECLARE_WAIT_QUEUE_HEAD(gdrhook_callbacks_wq);
/* Every callback runs inside a read section of it; unload waits for them. */
static struct srcu_struct gdrhook_callbacks_srcu;

/* ---------------------------------------------------------------- files */

struct gdrhook_file *gdrhook_file_create(void)
{
	struct gdrhook_file *f;

	if (!current->mm)
		return ERR_PTR(-EINVAL);
	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return ERR_PTR(-ENOMEM);
	if (gdrhook_events_init(&f->events, gdrhook_event_queue_len)) {
		kfree(f);
		return ERR_PTR(-ENOMEM);
	}
	kref_init(&f->ref);
	mutex_init(&f->lock);
	xa_init_flags(&f->handles, XA_FLAGS_ALLOC1);
	/* Keep the mm_struct (not the address space) so the pointer we
	 * compare against stays unique while the file lives.
	 */
	f->mm = current->mm;
	mmgrab(f->mm);
	f->opener = get_task_pid(current, PIDTYPE_TGID);
	f->opener_uid = current_uid();
	/*
	 * Held until the file goes, so that whoever closes it uncharges the
	 * opener's user: a counted reference to the credentials, which hold
	 * the user (put_cred() is there for modules on every kernel the
	 * module builds for; free_uid(), for a reference to the user alone,
	 * is exported by recent kernels only).
	 */
	f->cred = get_current_cred();
	f->user = f->cred->user;
	/* The opener's, as its credentials stay the file's (f_cred). */
	f->ipc_lock_exempt = has_capability_noaudit(current, CAP_IPC_LOCK);
	f->id = atomic64_inc_return(&gdrhook_next_file_id);
	atomic64_inc(&gdrhook_stats.files_live);
	return f;
}

/*
 * What `gdrhook node` reads in /proc/PID/fdinfo/FD of every holder of the
 * file (its keys: GDRHOOK_FDINFO_* in the uapi header): which file this
 * is (a forked child holds the same one), who opened it and is charged
 * for its pins, whether the address space that pinned is gone (killed,
 * exited or exec'd: nobody can unpin these pins any more, they live until
 * the last holder closes the file), and what the file holds pinned.
 */
void gdrhook_file_show(struct seq_file *m, struct gdrhook_file *f)
{
	u64 pins, bytes;

	mutex_lock(&f->lock);
	pins = f->nr_handles;
	bytes = f->pinned_bytes;
	mutex_unlock(&f->lock);
	seq_printf(m, "%s:\t%llu\n", GDRHOOK_FDINFO_FILE, f->id);
	seq_printf(m, "%s:\t%d\n", GDRHOOK_FDINFO_OPENER_PID,
		   pid_vnr(f->opener));
	seq_printf(m, "%s:\t%u\n", GDRHOOK_FDINFO_OPENER_UID,
		   from_kuid_munged(seq_user_ns(m), f->opener_uid));
	/* mmgrab() keeps the mm_struct, not its users: none left means the
	 * opener's address space has ended.
	 */
	seq_printf(m, "%s:\t%d\n", GDRHOOK_FDINFO_ORPHANED,
		   atomic_read(&f->mm->mm_users) == 0);
	seq_printf(m, "%s:\t%llu\n", GDRHOOK_FDINFO_PINS, pins);
	seq_printf(m, "%s:\t%llu\n", GDRHOOK_FDINFO_PINNED_BYTES, bytes);
}

static void gdrhook_file_free(struct kref *ref)
{
	struct gdrhook_file *f = container_of(ref, struct gdrhook_file, ref);

	WARN_ON(!xa_empty(&f->handles));
	xa_destroy(&f->handles);
	gdrhook_events_free(&f->events);
	mmdrop(f->mm);
	put_cred(f->cred);
	put_pid(f->opener);
	kfree(f);
	atomic64_dec(&gdrhook_stats.files_live);
}

void gdrhook_file_put(struct gdrhook_file *f)
{
	kref_put(&f->ref, gdrhook_file_free);
}

/* ----------------------------------------------------------------- pins */

static void gdrhook_pin_free(struct kref *ref)
{
	struct gdrhook_pin *pin = container_of(ref, struct gdrhook_pin, ref);

	kvfree(pin->bus_addrs);
	if (pin->peer)
		pci_dev_put(pin->peer);
	gdrhook_file_put(pin->file);
	kfree(pin);
}

void gdrhook_pin_put(struct gdrhook_pin *pin)
{
	kref_put(&pin->ref, gdrhook_pin_free);
}

/* Give back the quota and the handle slot a pin held in its file. */
static void gdrhook_file_unaccount(struct gdrhook_file *f, u64 length)
{
	lockdep_assert_held(&f->lock);
	f->nr_handles--;
	f->pinned_bytes -= length;
	atomic64_sub(length, &gdrhook_stats.pinned_bytes);
}

static bool gdrhook_pin_callbacks_idle(struct gdrhook_pin *pin)
{
	bool idle;

	xa_lock(&gdrhook_ids);
	idle = !pin->callbacks;
	xa_unlock(&gdrhook_ids);
	return idle;
}

/*
 * Retire the pin's id, so no callback finds it any more, then wait for the
 * callbacks that found it before: after this nothing but its owner touches
 * the pin.
 */
static void gdrhook_pin_retire(struct gdrhook_pin *pin)
{
	xa_erase(&gdrhook_ids, pin->id);
	wait_event(gdrhook_callbacks_wq, gdrhook_pin_callbacks_idle(pin));
}

int gdrhook_pin_create(struct gdrhook_file *f,
		       const struct gdrhook_backend_ops *backend,
		       const struct gdrhook_pin_req_k *req, u64 user_tag,
		       struct gdrhook_ioc_pin *reply)
{
	struct gdrhook_pin *pin;
	bool revoked;
	int err;

	pin = kzalloc(sizeof(*pin), GFP_KERNEL_ACCOUNT);
	if (!pin)
		return -ENOMEM;
	kref_init(&pin->ref);
	atomic_set(&pin->state, GDRHOOK_PIN_PINNING);
	mutex_init(&pin->lock);
	kref_get(&f->ref);
	pin->file = f;
	pin->backend = backend;
	pin->flags = req->flags;
	pin->addr = req->addr;
	pin->length = req->length;
	pin->user_tag = user_tag;
	pin->peer = req->peer ? pci_dev_get(req->peer) : NULL;

	mutex_lock(&f->lock);
	if (f->nr_handles >= gdrhook_max_handles_per_file ||
	    req->length > gdrhook_max_pinned_bytes_per_file - min_t(u64,
			f->pinned_bytes, gdrhook_max_pinned_bytes_per_file)) {
		err = -ENOSPC;
	} else {
		/* NULL reserves the slot; lookups see nothing until published. */
		err = xa_alloc_cyclic(&f->handles, &pin->handle, NULL,
				      xa_limit_31b, &f->next_handle, GFP_KERNEL_ACCOUNT);
		if (err >= 0) {
			err = 0;
			f->nr_handles++;
			f->pinned_bytes += req->length;
			atomic64_add(req->length, &gdrhook_stats.pinned_bytes);
		}
	}
	mutex_unlock(&f->lock);
	if (err)
		goto out_put;

	err = xa_alloc_cyclic(&gdrhook_ids, &pin->id, pin, xa_limit_31b,
			      &gdrhook_next_id, GFP_KERNEL_ACCOUNT);
	if (err < 0)
		goto out_unreserve;
	err = 0; /* 1: the ids wrapped */

	/*
	 * Host pages are charged before the backend pins or sizes anything by
	 * the request; GPU memory for what the driver or exporter actually
	 * pinned.
	 */
	if (backend->host_memory)
		err = gdrhook_pin_charge(pin, DIV_ROUND_UP(req->length, PAGE_SIZE));
	if (!err)
		err = backend->pin(pin, req);
	if (!err && !backend->host_memory)
		err = gdrhook_pin_charge(pin, DIV_ROUND_UP(pin->pinned_bytes, PAGE_SIZE));
	revoked = atomic_cmpxchg(&pin->state, GDRHOOK_PIN_PINNING,
				 err ? GDRHOOK_PIN_UNPINNING : GDRHOOK_PIN_LIVE) !=
		  GDRHOOK_PIN_PINNING;
	if (err || revoked) {
		/* The backend failed, or we are over the cap, or a callback
		 * revoked the pin before we could publish it (the memory was
		 * freed while being pinned: the callback let the driver side
		 * go, the caller may retry).
		 */
		if (revoked)
			err = -EAGAIN; /* whatever else the backend then met */
		gdrhook_pin_retire(pin);
		backend->release(pin, revoked);
		gdrhook_pin_uncharge(pin);
		goto out_unreserve;
	}

	reply->handle = pin->handle;
	reply->page_size = pin->page_size;
	reply->page_count = pin->page_count;
	atomic64_inc(&gdrhook_stats.pins_live);
	atomic64_inc(&gdrhook_stats.pins_total);

	mutex_lock(&f->lock);
	/* The slot is reserved, so this store needs no allocation. */
	xa_store(&f->handles, pin->handle, pin, GFP_KERNEL);
	mutex_unlock(&f->lock);
	return 0;

out_unreserve:
	mutex_lock(&f->lock);
	xa_erase(&f->handles, pin->handle);
	gdrhook_file_unaccount(f, req->length);
	mutex_unlock(&f->lock);
out_put:
	gdrhook_pin_put(pin);
	return err;
}

/*
 * Tear down a pin that its caller has already taken out of the handle
 * table: win LIVE->UNPINNING (or find that a callback won), retire the id
 * and wait out the callbacks still running on the pin, then let the
 * backend release what it still owns.
 */
static void gdrhook_pin_destroy(struct gdrhook_pin *pin)
{
	int old = atomic_cmpxchg(&pin->state, GDRHOOK_PIN_LIVE,
				 GDRHOOK_PIN_UNPINNING);

	WARN_ON_ONCE(old != GDRHOOK_PIN_LIVE && old != GDRHOOK_PIN_REVOKED);
	gdrhook_pin_retire(pin);
	pin->backend->release(pin, old == GDRHOOK_PIN_REVOKED);
	gdrhook_pin_uncharge(pin);
	atomic64_dec(&gdrhook_stats.pins_live);
	gdrhook_pin_put(pin);
}

/* Remove a published pin from its file's table; NULL if there is none. */
static struct gdrhook_pin *gdrhook_pin_take(struct gdrhook_file *f,
					    unsigned long handle)
{
	struct gdrhook_pin *pin;

	mutex_lock(&f->lock);
	pin = xa_load(&f->handles, handle);
	if (pin) {
		xa_erase(&f->handles, handle);
		gdrhook_file_unaccount(f, pin->length);
	}
	mutex_unlock(&f->lock);
	return pin;
}

static bool gdrhook_handle_valid(u64 handle)
{
	return handle != 0 && handle <= xa_limit_31b.max;
}

int gdrhook_pin_unpin(struct gdrhook_file *f, u64 handle)
{
	struct gdrhook_pin *pin;

	if (!gdrhook_handle_valid(handle))
		return -ENOENT;
	pin = gdrhook_pin_take(f, handle);
	if (!pin)
		return -ENOENT;
	gdrhook_pin_destroy(pin);
	return 0;
}

struct gdrhook_pin *gdrhook_pin_lookup(struct gdrhook_file *f, u64 handle)
{
	struct gdrhook_pin *pin;

	if (!gdrhook_handle_valid(handle))
		return NULL;
	mutex_lock(&f->lock);
	pin = xa_load(&f->handles, handle);
	if (pin)
		kref_get(&pin->ref);
	mutex_unlock(&f->lock);
	return pin;
}

void gdrhook_file_release_all(struct gdrhook_file *f)
{
	for (;;) {
		unsigned long handle = 0;
		struct gdrhook_pin *pin;

		/* No ioctl can run any more (this is release), so there are
		 * no reserved slots, only published pins.
		 */
		mutex_lock(&f->lock);
		pin = xa_find(&f->handles, &handle, ULONG_MAX, XA_PRESENT);
		if (pin) {
			xa_erase(&f->handles, handle);
			gdrhook_file_unaccount(f, pin->length);
		}
		mutex_unlock(&f->lock);
		if (!pin)
			break;
		gdrhook_pin_destroy(pin);
		cond_resched();
	}
}

/* ------------------------------------------------------------ callbacks */

/* Enters the SRCU read side that gdrhook_callback_end() leaves (sparse: the pair). */
struct gdrhook_pin *gdrhook_callback_begin(u32 id, int *srcu_idx)
	__acquires(&gdrhook_callbacks_srcu)
{
	struct gdrhook_pin *pin;

	*srcu_idx = srcu_read_lock(&gdrhook_callbacks_srcu);
	/*
	 * Counted under the same lock xa_erase() takes, and the owner waits
	 * for the count to fall to 0 after the erase, so a pin found here is
	 * not torn down until gdrhook_callback_end().
	 */
	xa_lock(&gdrhook_ids);
	pin = xa_load(&gdrhook_ids, id);
	if (pin)
		pin->callbacks++;
	xa_unlock(&gdrhook_ids);
	atomic64_inc(&gdrhook_stats.callbacks);
	if (!pin)
		atomic64_inc(&gdrhook_stats.late_callbacks);
	return pin;
}

void gdrhook_callback_end(struct gdrhook_pin *pin, int srcu_idx)
	__releases(&gdrhook_callbacks_srcu)
{
	if (pin) {
		xa_lock(&gdrhook_ids);
		pin->callbacks--;
		xa_unlock(&gdrhook_ids);
		/* The pin may be gone now; the wait queue is global. */
		wake_up_all(&gdrhook_callbacks_wq);
	}
	srcu_read_unlock(&gdrhook_callbacks_srcu, srcu_idx);
}

bool gdrhook_pin_revoke(struct gdrhook_pin *pin, u32 event_type)
{
	int old = atomic_read(&pin->state);

	for (;;) {
		int seen;

		if (old != GDRHOOK_PIN_PINNING && old != GDRHOOK_PIN_LIVE)
			return false; /* an unpin owns it, or already revoked */
		seen = atomic_cmpxchg(&pin->state, old, GDRHOOK_PIN_REVOKED);
		if (seen == old)
			break;
		old = seen;
	}
	atomic64_inc(&gdrhook_stats.revocations);
	if (old == GDRHOOK_PIN_LIVE) {
		struct gdrhook_event e = {
			.type = event_type,
			.handle = pin->handle,
			.user_tag = pin->user_tag,
			.addr = pin->addr,
			.length = pin->length,
		};

		gdrhook_events_post(&pin->file->events, &e);
	}
	return true;
}

int gdrhook_pin_table_init(void)
{
	return init_srcu_struct(&gdrhook_callbacks_srcu);
}

void gdrhook_pin_table_exit(void)
{
	/* Every file is closed before the module can go, and closing
	 * retires every id; a late callback (one that found no pin) may
	 * still be on its way out of our code.
	 */
	synchronize_srcu(&gdrhook_callbacks_srcu);
	cleanup_srcu_struct(&gdrhook_callbacks_srcu);
	WARN_ON(!xa_empty(&gdrhook_ids));
	xa_destroy(&gdrhook_ids);
}
