/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * TEST ONLY: the bad_table parameter of both test providers: get_pages
 * succeeds with a well-formed table made into one of the malformed shapes
 * of enum gdrhook_tp_bad_table (gdrhook_tp_ioctl.h). Included by each
 * provider after its own nv-p2p header: the fields are named alike, the
 * layouts are each API's. The provider keeps its own record of what it
 * pinned, so a spoiled table is released and put like any other, and it
 * keeps one spare entry past the range, so a client that takes ONE_EXTRA
 * reads pinned memory.
 */
#ifndef GDRHOOK_TP_BAD_TABLE_H
#define GDRHOOK_TP_BAD_TABLE_H

#include <linux/kernel.h>
#include <linux/moduleparam.h>

#include "gdrhook_tp_ioctl.h"

static unsigned int bad_table;
module_param(bad_table, uint, 0644);
MODULE_PARM_DESC(bad_table, "get_pages answers a table of this malformed shape (enum gdrhook_tp_bad_table; 0: off)");

/* The shape asked for; NULL: answer success with no table at all. */
static inline unsigned int tp_bad_table_shape(void)
{
	return READ_ONCE(bad_table);
}

/*
 * Spoil PT, well formed for a range of LEN bytes. A page size "up" is the
 * next code: 4 KiB to 64 KiB (16 times), 64 KiB to 128 KiB (twice).
 */
static inline void tp_spoil_table(struct nvidia_p2p_page_table *pt,
				  unsigned int shape, u64 len)
{
	u32 up = pt->page_size == NVIDIA_P2P_PAGE_SIZE_4KB ? 16 : 2;

	switch (shape) {
	case GDRHOOK_TP_TABLE_VERSION_MAJOR:
		pt->version += 1u << 16;
		break;
	case GDRHOOK_TP_TABLE_VERSION_OLDER:
		pt->version -= 1;
		break;
	case GDRHOOK_TP_TABLE_VERSION_NEWER:
		pt->version += 1;
		break;
	case GDRHOOK_TP_TABLE_PAGE_SIZE_UNKNOWN:
		pt->page_size = NVIDIA_P2P_PAGE_SIZE_COUNT;
		break;
	case GDRHOOK_TP_TABLE_PAGE_SIZE_4K:
		pt->page_size = NVIDIA_P2P_PAGE_SIZE_4KB;
		pt->entries = DIV_ROUND_UP(len, 64 * 1024);
		break;
	case GDRHOOK_TP_TABLE_PAGE_SIZE_128K:
		pt->page_size = NVIDIA_P2P_PAGE_SIZE_128KB;
		break;
	case GDRHOOK_TP_TABLE_LAST_PAST_END:
		pt->page_size += 1;
		pt->entries = DIV_ROUND_UP(pt->entries, up);
		break;
	case GDRHOOK_TP_TABLE_NO_PAGES:
		pt->pages = NULL;
		break;
	case GDRHOOK_TP_TABLE_NO_ENTRIES:
		pt->entries = 0;
		break;
	case GDRHOOK_TP_TABLE_ONE_SHORT:
		pt->entries -= 1;
		break;
	case GDRHOOK_TP_TABLE_ONE_EXTRA:
		pt->entries += 1;
		break;
	case GDRHOOK_TP_TABLE_NULL_ENTRY:
		pt->pages[pt->entries - 1] = NULL;
		break;
	}
}

#endif /* GDRHOOK_TP_BAD_TABLE_H */
