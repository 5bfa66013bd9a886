/* SPDX-License-Identifier: (GPL-2.0-only WITH Linux-syscall-note) OR MIT */
/*
 * Control interface of the TEST-ONLY nv-p2p provider
 * (gdrhook_tp.ko), /dev/gdrhook_tp. Tests and the fake driver's cuMemFree
 * use it to make the provider behave like the NVIDIA driver freeing memory.
 */
#ifndef GDRHOOK_TP_IOCTL_H
#define GDRHOOK_TP_IOCTL_H

#include <linux/types.h>
#ifdef __KERNEL__
#include <linux/ioctl.h>
#else
#include <sys/ioctl.h>
#endif

#define GDRHOOK_TP_DEVICE_PATH "/dev/gdrhook_tp"

/*
 * Fire the free callback of every non-persistent page table of the calling
 * process that overlaps [addr, addr + length), as nvidia.ko does when the
 * memory is freed; returns after the callbacks have run and the tables are
 * freed. May run while an unpin of the same table is in flight.
 */
struct gdrhook_tp_fire {
	__u64 addr;
	__u64 length;
	__u32 fired;    /* out: callbacks invoked */
	__u32 reserved; /* must be 0 */
};

#define GDRHOOK_TP_IOCTL_FIRE _IOWR(0xD8, 0x01, struct gdrhook_tp_fire)

#endif
