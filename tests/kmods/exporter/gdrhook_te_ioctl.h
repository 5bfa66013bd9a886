/* SPDX-License-Identifier: (GPL-2.0-only WITH Linux-syscall-note) OR MIT */
/*
 * Control interface of the TEST-ONLY dma-buf exporter
 * (gdrhook_te.ko), /dev/gdrhook_te. Tests use it to make dma-bufs whose
 * exporter moves them, which is when an exporter calls move_notify.
 */
#ifndef GDRHOOK_TE_IOCTL_H
#define GDRHOOK_TE_IOCTL_H

#include <linux/const.h>
#include <linux/types.h>
#ifdef __KERNEL__
#include <linux/ioctl.h>
#else
#include <sys/ioctl.h>
#endif

#define GDRHOOK_TE_DEVICE_PATH "/dev/gdrhook_te"

/* Largest buffer CREATE makes. */
#define GDRHOOK_TE_MAX_SIZE (64ull << 20)

/*
 * gdrhook_te_create.flags: the exporter implements pin/unpin, so it is a
 * dynamic exporter and refuses to move a buffer while any attachment has
 * it pinned. Without it the exporter has no pin, and moves whenever asked.
 */
#define GDRHOOK_TE_PINNABLE _BITUL(0)

/* Make a buffer of size bytes (page aligned, > 0) of zeroed pages. */
struct gdrhook_te_create {
	__u64 size;     /* in */
	__u32 flags;    /* in: GDRHOOK_TE_* */
	__s32 fd;       /* out: the dma-buf, O_RDWR | O_CLOEXEC */
};

/*
 * gdrhook_te_move.flags: the buffer is pinned, and the exporter takes it
 * back all the same, as one whose device is going away does: it calls
 * dma_buf_move_notify() without moving the pages. Importers get the same
 * notification; what they must do with it is the same.
 */
#define GDRHOOK_TE_MOVE_EVEN_IF_PINNED _BITUL(0)

/*
 * Move the buffer to new pages, as a driver evicting it would: under the
 * buffer's reservation lock, copy it, switch to the new pages and call
 * dma_buf_move_notify() on every dynamic attachment. Mappings made before
 * keep the old pages until they are unmapped. EBUSY (and nothing
 * notified) when the buffer is pinned, unless flags say otherwise; EINVAL
 * when fd is not one of ours.
 */
struct gdrhook_te_move {
	__s32 fd;       /* in: a dma-buf made by CREATE */
	__u32 flags;    /* in: GDRHOOK_TE_MOVE_* */
	__u32 notified; /* out: attachments move_notify was called for */
	__u32 moved;    /* out: 1 if it moved to new pages, 0 if not */
};

#define GDRHOOK_TE_IOCTL_CREATE _IOWR(0xD9, 0x01, struct gdrhook_te_create)
#define GDRHOOK_TE_IOCTL_MOVE   _IOWR(0xD9, 0x02, struct gdrhook_te_move)

#endif
