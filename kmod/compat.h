/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * compat.h - the kernel API variants gdrhook.ko copes with.
 *
 * gdrhook_config.h is generated at build time by probes/run-probes.sh,
 * which compiles one tiny test per feature (probes/HAVE_*.sh) against the
 * target kernel's headers. Testing the API itself, rather than comparing
 * version numbers, also gets distribution backports right (Debian's 6.1
 * has the _unlocked dma-buf map functions of 6.2, for instance).
 */
#ifndef GDRHOOK_COMPAT_H
#define GDRHOOK_COMPAT_H

#include <linux/dma-buf.h>
#include <linux/module.h>

#include "gdrhook_config.h"

/* 6.13 made the namespace a string literal; before, it was an identifier. */
#ifdef HAVE_MODULE_IMPORT_NS_IDENTIFIER
#define GDRHOOK_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS(DMA_BUF)
#else
#define GDRHOOK_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS("DMA_BUF")
#endif

/*
 * Static importers: since the dma-buf locking rework the plain map function
 * expects the reservation lock held and the _unlocked one takes it; before
 * it, the plain one took no lock and was the right call.
 */
static inline struct sg_table *
gdrhook_dma_buf_map_unlocked(struct dma_buf_attachment *attach,
			     enum dma_data_direction dir)
{
#ifdef HAVE_DMA_BUF_MAP_ATTACHMENT_UNLOCKED
	return dma_buf_map_attachment_unlocked(attach, dir);
#else
	return dma_buf_map_attachment(attach, dir);
#endif
}

static inline void
gdrhook_dma_buf_unmap_unlocked(struct dma_buf_attachment *attach,
			       struct sg_table *sgt,
			       enum dma_data_direction dir)
{
#ifdef HAVE_DMA_BUF_MAP_ATTACHMENT_UNLOCKED
	dma_buf_unmap_attachment_unlocked(attach, sgt, dir);
#else
	dma_buf_unmap_attachment(attach, sgt, dir);
#endif
}

#endif /* GDRHOOK_COMPAT_H */
