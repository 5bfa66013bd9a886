/* SPDX-License-Identifier: (GPL-2.0-only WITH Linux-syscall-note) OR MIT */
/*
 * The one interface between gdrhook.ko and user space.
 *
 * Shared verbatim by the kernel module (kmod/) and the cache's kmod backend
 * (cache/). Versioned: GDRHOOK_IOCTL_GET_VERSION reports the ABI major and
 * minor; a major change means an incompatible layout, a minor one means
 * something was added behind a flag or a reserved field.
 *
 * Rules every request follows, so that the module can validate everything:
 *  - the ioctl number encodes the exact structure size; a truncated or
 *    oversized structure is refused with EINVAL;
 *  - reserved fields and unknown flag bits must be zero (EINVAL otherwise),
 *    so they can be given a meaning later without breaking old callers;
 *  - handles are per open file: a handle from another open of /dev/gdrhook
 *    is unknown here (ENOENT);
 *  - every request except GET_VERSION must come from the process that
 *    opened the file (EPERM otherwise), so a process pins only its memory.
 *
 * Revocations the caller did not ask for (the NVIDIA free callback, a
 * dma-buf move notification) are queued as struct gdrhook_event records
 * that read() returns whole and poll() signals with POLLIN.
 */
#ifndef GDRHOOK_IOCTL_H
#define GDRHOOK_IOCTL_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/ioctl.h>
#else
#include <linux/types.h>
#include <sys/ioctl.h>
#endif

#define GDRHOOK_DEVICE_NAME "gdrhook"
#define GDRHOOK_DEVICE_PATH "/dev/gdrhook"

#define GDRHOOK_ABI_MAJOR 1
#define GDRHOOK_ABI_MINOR 2

/* Most handles one GDRHOOK_IOCTL_UNPIN_BATCH call accepts. */
#define GDRHOOK_UNPIN_BATCH_MAX 16384u

/*
 * GPU pages are 64 KiB: nv-p2p ranges must be aligned to this. A module
 * built for Tegra (GDRHOOK_FEATURE_NVP2P_TEGRA) needs only 4 KiB.
 */
#define GDRHOOK_NVP2P_ALIGN (64ull * 1024)

enum gdrhook_backend {
	GDRHOOK_BACKEND_NVP2P = 1,  /* nvidia_p2p_get_pages on a virtual range */
	GDRHOOK_BACKEND_DMABUF = 2, /* import of a dma-buf fd */
	/*
	 * The caller's own pages, pin_user_pages(FOLL_LONGTERM) (ABI 1.1):
	 * host memory of an integrated GPU (Jetson Thor, Orin). addr and
	 * length page aligned; revoked by munmap, a zap or the address
	 * space's end.
	 */
	GDRHOOK_BACKEND_HOST_PAGES = 3,
};

/* gdrhook_pin.flags */
/* nv-p2p only: use nvidia_p2p_get_pages_persistent (no free callback). */
#define GDRHOOK_PIN_PERSISTENT (1u << 0)
/* peer_domain/peer_bdf name the PCI device that will do the DMA. */
#define GDRHOOK_PIN_PEER (1u << 1)
#define GDRHOOK_PIN_FLAGS_ALL (GDRHOOK_PIN_PERSISTENT | GDRHOOK_PIN_PEER)

/* gdrhook_version.features */
#define GDRHOOK_FEATURE_NVP2P (1u << 0)            /* nvidia_p2p_* resolved */
#define GDRHOOK_FEATURE_NVP2P_PERSISTENT (1u << 1) /* ..._persistent too */
#define GDRHOOK_FEATURE_DMABUF (1u << 2)
#define GDRHOOK_FEATURE_GET_PAGES (1u << 3) /* this caller may GET_PAGES */
#define GDRHOOK_FEATURE_HOST_PAGES (1u << 4) /* GDRHOOK_BACKEND_HOST_PAGES */
/* nv-p2p is Tegra's API (Jetson Orin, DRIVE): ranges 4 KiB aligned (ABI 1.2). */
#define GDRHOOK_FEATURE_NVP2P_TEGRA (1u << 5)

struct gdrhook_ioc_version {
	__u32 abi_major;         /* out */
	__u32 abi_minor;         /* out */
	__u32 features;          /* out: GDRHOOK_FEATURE_* */
	__u32 unpin_batch_max;   /* out: GDRHOOK_UNPIN_BATCH_MAX */
	__u64 max_handles;       /* out: per-file handle limit */
	__u64 max_pinned_bytes;  /* out: per-file pinned-bytes limit */
};

struct gdrhook_ioc_pin {
	__u32 backend;     /* in: enum gdrhook_backend */
	__u32 flags;       /* in: GDRHOOK_PIN_* */
	/*
	 * in: nv-p2p: the caller's GPU virtual address (64 KiB aligned);
	 *     dma-buf: offset into the buffer (page aligned).
	 */
	__u64 addr;
	__u64 length;      /* in: bytes, > 0, aligned like addr */
	__s32 dmabuf_fd;   /* in: dma-buf only; must be -1 for nv-p2p */
	__u32 peer_domain; /* in: PCI domain of the peer (GDRHOOK_PIN_PEER) */
	__u16 peer_bdf;    /* in: bus << 8 | device << 3 | function */
	__u16 reserved0;   /* must be 0 */
	__u32 reserved1;   /* must be 0 */
	__u64 user_tag;    /* in: opaque, echoed in QUERY and events */
	__u64 handle;      /* out: nonzero, valid in this open file only */
	__u64 page_size;   /* out: bytes per page entry */
	__u64 page_count;  /* out: length / page_size */
};

struct gdrhook_ioc_unpin {
	__u64 handle;      /* in */
};

struct gdrhook_ioc_unpin_batch {
	__u64 handles;     /* in: user pointer to count __u64 handles */
	__u32 count;       /* in: 1..GDRHOOK_UNPIN_BATCH_MAX */
	__u32 reserved;    /* must be 0 */
	/*
	 * out: how many were unpinned; every valid handle is unpinned even when
	 * others are not, and then the call fails with the first error, whose
	 * index is first_failed.
	 */
	__u32 unpinned;
	__u32 first_failed;
};

enum gdrhook_pin_state {
	GDRHOOK_STATE_VALID = 1,
	GDRHOOK_STATE_REVOKED = 2, /* the exporter or driver took it back */
};

struct gdrhook_ioc_query {
	__u64 handle;      /* in */
	__u32 state;       /* out: enum gdrhook_pin_state */
	__u32 backend;     /* out */
	__u32 flags;       /* out: the PIN flags */
	__u32 reserved;    /* must be 0 */
	__u64 addr;        /* out: as given to PIN */
	__u64 length;      /* out */
	__u64 page_size;   /* out */
	__u64 page_count;  /* out */
	__u64 user_tag;    /* out */
};

/*
 * Bus addresses of a pin's pages: DMA addresses for the peer named at PIN
 * time, else the addresses the driver reported. Privileged (CAP_SYS_RAWIO)
 * unless the module parameter allow_unprivileged_get_pages is set, since
 * bus addresses let a device reach the memory.
 */
struct gdrhook_ioc_get_pages {
	__u64 handle;      /* in */
	__u64 addrs;       /* in: user pointer to max_entries __u64 */
	__u32 max_entries; /* in: > 0 */
	__u32 first;       /* in: index of the first page to report */
	__u32 entries;     /* out: how many were written */
	__u32 reserved;    /* must be 0 */
	__u64 page_size;   /* out */
	__u64 page_count;  /* out */
};

#define GDRHOOK_IOCTL_MAGIC 0xD7

#define GDRHOOK_IOCTL_GET_VERSION _IOR(GDRHOOK_IOCTL_MAGIC, 0x00, struct gdrhook_ioc_version)
#define GDRHOOK_IOCTL_PIN         _IOWR(GDRHOOK_IOCTL_MAGIC, 0x01, struct gdrhook_ioc_pin)
#define GDRHOOK_IOCTL_UNPIN       _IOW(GDRHOOK_IOCTL_MAGIC, 0x02, struct gdrhook_ioc_unpin)
#define GDRHOOK_IOCTL_UNPIN_BATCH _IOWR(GDRHOOK_IOCTL_MAGIC, 0x03, struct gdrhook_ioc_unpin_batch)
#define GDRHOOK_IOCTL_QUERY       _IOWR(GDRHOOK_IOCTL_MAGIC, 0x04, struct gdrhook_ioc_query)
#define GDRHOOK_IOCTL_GET_PAGES   _IOWR(GDRHOOK_IOCTL_MAGIC, 0x05, struct gdrhook_ioc_get_pages)

/* Event kinds read() returns. */
enum gdrhook_event_type {
	/* The NVIDIA driver freed the memory under a pin (free callback). */
	GDRHOOK_EVENT_REVOKED_NVP2P = 1,
	/* A dma-buf exporter moved or tore down the buffer (move_notify). */
	GDRHOOK_EVENT_REVOKED_DMABUF = 2,
	/*
	 * The event queue was full and events were lost: the reader must QUERY
	 * the handles it cares about. handle and user_tag are 0; addr holds the
	 * number of events dropped.
	 */
	GDRHOOK_EVENT_OVERFLOW = 3,
	/* A host-pages pin's range was unmapped or zapped, or its process ended. */
	GDRHOOK_EVENT_REVOKED_HOST = 4,
};

struct gdrhook_event {
	__u32 type;        /* enum gdrhook_event_type */
	__u32 reserved;
	__u64 handle;      /* the pin; it stays allocated until UNPIN */
	__u64 user_tag;    /* as given to PIN */
	__u64 addr;        /* as given to PIN (OVERFLOW: events dropped) */
	__u64 length;
};

/*
 * The lines a /dev/gdrhook file adds to /proc/PID/fdinfo/FD of each of its
 * holders, after the kernel's own: "KEY:\tVALUE", VALUE a decimal number.
 * Read by `gdrhook node`, and by anyone's scripts: renaming one breaks
 * them.
 */
/* A number unique while the module is loaded (a forked child shares it). */
#define GDRHOOK_FDINFO_FILE "gdrhook-file"
/* The opener, in the reader's pid and user namespaces: its pins' payer. */
#define GDRHOOK_FDINFO_OPENER_PID "gdrhook-opener-pid"
#define GDRHOOK_FDINFO_OPENER_UID "gdrhook-opener-uid"
/* 1 once the opener's address space is gone: nobody can unpin any more. */
#define GDRHOOK_FDINFO_ORPHANED "gdrhook-orphaned"
#define GDRHOOK_FDINFO_PINS "gdrhook-pins"
#define GDRHOOK_FDINFO_PINNED_BYTES "gdrhook-pinned-bytes"

#endif /* GDRHOOK_IOCTL_H */
