// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Pinning by importing a dma-buf (the upstream path,
 * what NVIDIA's CUDA 13 porting advice points to instead of nv-p2p).
 *
 * A pin holds: a reference on the dma-buf, an attachment for the peer PCI
 * device named in the request (NVIDIA's exporter only maps for a PCI
 * device, and bus addresses only mean something for a device), and the
 * mapped sg table. Unpin unmaps, detaches and drops the reference, which
 * is what lets the exporter free the memory.
 *
 * By default the import is dynamic (an importer with move_notify that
 * allows peer-to-peer), and the attachment is pinned so the exporter
 * keeps the memory in place; if the exporter still moves or revokes it,
 * move_notify turns that into a revocation event. The module parameter
 * dmabuf_dynamic=0 falls back to a static attachment.
 */
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/mm.h>
#include <linux/pci.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "compat.h"
#include "gdrhook.h"

#ifdef HAVE_DMA_BUF_DYNAMIC_P2P
/* Called by the exporter with the buffer's reservation lock held. */
static void gdrhook_dmabuf_move_notify(struct dma_buf_attachment *attach)
{
	int srcu_idx;
	struct gdrhook_pin *pin =
		gdrhook_callback_begin((u32)(uintptr_t)attach->importer_priv, &srcu_idx);

	/*
	 * Only mark it: the mapping is torn down by UNPIN (or close), by the
	 * one owner of the pin, so a revocation never races the teardown.
	 */
	if (pin)
		gdrhook_pin_revoke(pin, GDRHOOK_EVENT_REVOKED_DMABUF);
	gdrhook_callback_end(pin, srcu_idx);
}

static const struct dma_buf_attach_ops gdrhook_dmabuf_importer_ops = {
	.allow_peer2peer = true,
	.move_notify = gdrhook_dmabuf_move_notify,
};
#endif

/* Unmap the pin's mapping and, for a dynamic import, unpin the attachment. */
static void gdrhook_dmabuf_unmap(struct gdrhook_pin *pin)
{
#ifdef HAVE_DMA_BUF_DYNAMIC_P2P
	if (pin->db.dynamic) {
		struct dma_buf *dmabuf = pin->db.dmabuf;

		dma_resv_lock(dmabuf->resv, NULL);
		dma_buf_unmap_attachment(pin->db.attach, pin->db.sgt,
					 DMA_BIDIRECTIONAL);
		dma_buf_unpin(pin->db.attach);
		dma_resv_unlock(dmabuf->resv);
		return;
	}
#endif
	gdrhook_dma_buf_unmap_unlocked(pin->db.attach, pin->db.sgt,
				       DMA_BIDIRECTIONAL);
}

/* Let go of whatever the pin holds of the dma-buf (all of it, or part). */
static void gdrhook_dmabuf_put(struct gdrhook_pin *pin)
{
	struct dma_buf *dmabuf = pin->db.dmabuf;

	if (!dmabuf)
		return;
	if (pin->db.sgt) {
		gdrhook_dmabuf_unmap(pin);
		pin->db.sgt = NULL;
	}
	if (pin->db.attach) {
		dma_buf_detach(dmabuf, pin->db.attach);
		pin->db.attach = NULL;
	}
	dma_buf_put(dmabuf);
	pin->db.dmabuf = NULL;
}

static int gdrhook_dmabuf_attach_map(struct gdrhook_pin *pin,
				     struct device *dev)
{
	struct dma_buf *dmabuf = pin->db.dmabuf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;

#ifdef HAVE_DMA_BUF_DYNAMIC_P2P
	pin->db.dynamic = gdrhook_dmabuf_dynamic;
	if (pin->db.dynamic) {
		int err;

		attach = dma_buf_dynamic_attach(dmabuf, dev,
						&gdrhook_dmabuf_importer_ops,
						(void *)(uintptr_t)pin->id);
		if (IS_ERR(attach))
			return PTR_ERR(attach);
		pin->db.attach = attach;

		dma_resv_lock(dmabuf->resv, NULL);
		err = dma_buf_pin(attach);
		if (err) {
			dma_resv_unlock(dmabuf->resv);
			return err;
		}
		sgt = dma_buf_map_attachment(attach, DMA_BIDIRECTIONAL);
		if (IS_ERR(sgt))
			dma_buf_unpin(attach);
		dma_resv_unlock(dmabuf->resv);
		if (IS_ERR(sgt))
			return PTR_ERR(sgt);
		pin->db.sgt = sgt;
		return 0;
	}
#endif
	attach = dma_buf_attach(dmabuf, dev);
	if (IS_ERR(attach))
		return PTR_ERR(attach);
	pin->db.attach = attach;
	sgt = gdrhook_dma_buf_map_unlocked(attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(sgt))
		return PTR_ERR(sgt);
	pin->db.sgt = sgt;
	return 0;
}

/* Copy the DMA address of every page of [addr, addr + length). */
static int gdrhook_dmabuf_collect(struct gdrhook_pin *pin)
{
	struct sg_dma_page_iter it;
	u64 n = 0;

	pin->bus_addrs = kvmalloc_array(pin->page_count, sizeof(u64),
					GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!pin->bus_addrs)
		return -ENOMEM;
	gdrhook_for_each_sgtable_dma_page(pin->db.sgt, &it, pin->addr >> PAGE_SHIFT) {
		if (n == pin->page_count)
			break;
		pin->bus_addrs[n++] = sg_page_iter_dma_address(&it);
	}
	/* An exporter that mapped less than the buffer's size. */
	return n == pin->page_count ? 0 : -EIO;
}

static int gdrhook_dmabuf_pin(struct gdrhook_pin *pin,
			      const struct gdrhook_pin_req_k *req)
{
	struct dma_buf *dmabuf;
	int err;

	dmabuf = dma_buf_get(req->dmabuf_fd); /* EBADF, or EINVAL: not a dma-buf */
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	pin->db.dmabuf = dmabuf;

	if (req->addr >= dmabuf->size || req->length > dmabuf->size - req->addr)
		return -EINVAL;
	pin->page_size = PAGE_SIZE;
	pin->page_count = req->length >> PAGE_SHIFT;
	/* The exporter pins (or maps) the whole buffer, not just our range. */
	pin->pinned_bytes = dmabuf->size;

	/* On failure what was got stays in the pin, for release(). */
	err = gdrhook_dmabuf_attach_map(pin, &req->peer->dev);
	if (err)
		return err;
	return gdrhook_dmabuf_collect(pin);
}

static void gdrhook_dmabuf_release(struct gdrhook_pin *pin, bool revoked)
{
	/* Revoked or not, the attachment and the reference are still ours. */
	gdrhook_dmabuf_put(pin);
}

const struct gdrhook_backend_ops gdrhook_backend_dmabuf = {
	.name = "dma-buf",
	.pin = gdrhook_dmabuf_pin,
	.release = gdrhook_dmabuf_release,
};
