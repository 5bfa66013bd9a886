/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * The driver's page table read the same way by both flavours of the
 * nvidia_p2p_* API (nvp2p.h). Each flavour includes this after its own
 * nv-p2p header: the fields are the same, the struct's layout is the
 * flavour's, so these are static inline, compiled against the layout of
 * the driver the module is built for.
 */
#ifndef GDRHOOK_NVP2P_TABLE_H
#define GDRHOOK_NVP2P_TABLE_H

#include <linux/slab.h>

#include "gdrhook.h"
#include "nvp2p.h"

/*
 * The driver's answer must describe exactly the range we asked for: pages
 * that cover it, the last one running past its end by less than a page,
 * or (EXACT: Tegra's rule) not at all, and every one of them there (the
 * flavour reads each entry's address). Anything else is refused, EIO; the
 * table stays in the pin for release() to give back. Then the pin takes
 * the table's page size and count and an array for their bus addresses,
 * which the flavour fills.
 */
static inline int gdrhook_nvp2p_take_table(struct gdrhook_pin *pin,
					   const struct nvidia_p2p_page_table *pt,
					   bool exact)
{
	u64 ps;
	u32 i;

	if (!pt || !gdrhook_nvp2p_version_ok(pt->version, NVIDIA_P2P_PAGE_TABLE_VERSION))
		return -EIO;
	ps = gdrhook_nvp2p_page_bytes(pt->page_size);
	if (!ps || pt->entries == 0 || !pt->pages ||
	    (u64)pt->entries * ps < pin->length ||
	    (u64)(pt->entries - 1) * ps >= pin->length ||
	    (exact && (u64)pt->entries * ps != pin->length))
		return -EIO;
	for (i = 0; i < pt->entries; i++)
		if (!pt->pages[i])
			return -EIO;
	pin->page_size = ps;
	pin->page_count = pt->entries;
	pin->pinned_bytes = ps * pt->entries;
	pin->bus_addrs = kvmalloc_array(pin->page_count, sizeof(u64),
					GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	return pin->bus_addrs ? 0 : -ENOMEM;
}

#endif /* GDRHOOK_NVP2P_TABLE_H */
