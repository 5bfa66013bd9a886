/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * The kernel API variants gdrhook.ko copes with.
 *
 * gdrhook_config.h is generated at build time by probes/run-probes.sh,
 * which compiles one tiny test per feature (probes/HAVE_*.sh) against the
 * target kernel's headers. Testing the API itself, rather than comparing
 * version numbers, also gets distribution backports right (Debian's 6.1
 * has the _unlocked dma-buf map functions of 6.2, for instance).
 *
 * Oldest kernel: 5.8 by the APIs used (dma_buf_dynamic_attach with
 * allow_peer2peer, pin_user_pages in the test provider); 5.5 and 5.8
 * additions below have fallbacks, so the floor is set by the dma-buf
 * importer. Tested (VM suite): Debian's 6.1 and 6.12, 6.12-rt.
 */
#ifndef GDRHOOK_COMPAT_H
#define GDRHOOK_COMPAT_H

#include <linux/dma-buf.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/version.h>

#include "gdrhook_config.h"

#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 8, 0)
#error "gdrhook.ko needs Linux 5.8 or later"
#endif

/*
 * Host-pages pins are charged to the user's locked memory, struct
 * user_struct's locked_vm (pin_account.c), which a kernel has with any of
 * its other chargers: networking (MSG_ZEROCOPY), io_uring, memfd_secret,
 * VFIO's or IOMMUFD's. A kernel with none of them has no network either,
 * and nothing for an RDMA registration cache to do.
 */
#ifndef HAVE_USER_LOCKED_VM
#error "gdrhook.ko needs struct user_struct's locked_vm (CONFIG_NET or CONFIG_IO_URING)"
#endif

/* 5.5: the ioctl that only turns a compat pointer into a native one. */
#ifdef HAVE_COMPAT_PTR_IOCTL
#define gdrhook_compat_ptr_ioctl compat_ptr_ioctl
#else
#include <linux/compat.h>
static inline long gdrhook_compat_ptr_ioctl(struct file *f, unsigned int cmd,
					    unsigned long arg)
{
	if (!f->f_op->unlocked_ioctl)
		return -ENOIOCTLCMD;
	return f->f_op->unlocked_ioctl(f, cmd, (unsigned long)compat_ptr(arg));
}
#endif

/* 5.8: the sg_table iterators. */
#ifdef HAVE_FOR_EACH_SGTABLE_DMA_PAGE
#define gdrhook_for_each_sgtable_dma_page for_each_sgtable_dma_page
#else
#define gdrhook_for_each_sgtable_dma_page(sgt, it, first) \
	for_each_sg_dma_page((sgt)->sgl, it, (sgt)->nents, first)
#endif

/*
 * Since 6.2 the plain dma_buf_map_attachment() expects the reservation lock
 * held; the _unlocked variant must then be there. A probe that failed on
 * such a kernel (a broken header tree, a compiler problem) must not fall
 * back silently to calling it without the lock.
 */
#if !defined(HAVE_DMA_BUF_MAP_ATTACHMENT_UNLOCKED) && \
	LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#error "Linux 6.2 or later without dma_buf_map_attachment_unlocked(): see the probes' output"
#endif

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
