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

/*
 * Values of the providers' bad_table parameter (tp_bad_table.h): get_pages
 * (and the desktop's get_pages_persistent) succeed with a page table of
 * this shape. Each table still pins its memory and must be put like any
 * other. "Up": the page size code after the provider's own (the desktop's
 * 64 KiB, Tegra's 4 KiB).
 */
enum gdrhook_tp_bad_table {
	GDRHOOK_TP_TABLE_GOOD = 0,
	GDRHOOK_TP_TABLE_NULL,           /* success, and no table */
	GDRHOOK_TP_TABLE_VERSION_MAJOR,  /* another major version */
	GDRHOOK_TP_TABLE_VERSION_OLDER,  /* the same major, an older minor */
	GDRHOOK_TP_TABLE_VERSION_NEWER,  /* a newer minor: compatible, taken */
	GDRHOOK_TP_TABLE_PAGE_SIZE_UNKNOWN, /* a page size code past the last */
	GDRHOOK_TP_TABLE_PAGE_SIZE_4K,   /* 4 KiB pages, as many as 64 KiB ones */
	GDRHOOK_TP_TABLE_PAGE_SIZE_128K, /* 128 KiB pages, the count unchanged */
	GDRHOOK_TP_TABLE_LAST_PAST_END,  /* pages a size up covering the range,
					  * the last past its end: the desktop
					  * rule takes it, Tegra's does not
					  */
	GDRHOOK_TP_TABLE_NO_PAGES,       /* entries, and a NULL page array */
	GDRHOOK_TP_TABLE_NO_ENTRIES,     /* 0 entries */
	GDRHOOK_TP_TABLE_ONE_SHORT,      /* one entry fewer than the range */
	GDRHOOK_TP_TABLE_ONE_EXTRA,      /* one entry past the range */
	GDRHOOK_TP_TABLE_NULL_ENTRY,     /* the last entry a NULL pointer */
	GDRHOOK_TP_TABLE_SHAPES
};

#endif
