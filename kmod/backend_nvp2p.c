// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Pinning through the NVIDIA driver's nvidia_p2p_* API: discrete GPUs.
 *
 * The desktop and server flavour of the API (nvp2p.h); holding the
 * driver's symbols is nvp2p_driver.c's job.
 *
 * Rules from NVIDIA's GPUDirect RDMA guide that shape this file:
 *  - the free callback gets an opaque pointer; we pass the pin's id, so a
 *    callback arriving after the pin is gone is a failed lookup;
 *  - inside the callback only nvidia_p2p_free_dma_mapping() and
 *    nvidia_p2p_free_page_table() may be called, never put_pages;
 *  - the callback may come at any moment once get_pages has registered
 *    it, from another thread, even before get_pages has returned; the
 *    driver frees the table as soon as the callback returns. So PIN holds
 *    the pin's lock from before get_pages until it has copied everything
 *    it needs out of the table (and mapped it for the peer), and the
 *    callback takes the same lock before it revokes: a callback that
 *    arrives during PIN waits, and PIN never reads a freed table. The
 *    driver must not call back from inside get_pages on the same thread
 *    (it does not; gdrcopy relies on the same);
 *  - no lock of ours is held across put_pages, which may wait for a
 *    running callback;
 *  - whether unpin or callback releases the pages is decided by the pin's
 *    state machine (pin_table.c), so the table is freed exactly once;
 *  - unpin calls nvidia_p2p_put_pages() alone, not dma_unmap_pages() first:
 *    put_pages unlinks the table atomically against the driver's own
 *    teardown and frees the table's DMA mappings with it, whereas a
 *    dma_unmap_pages() issued after a concurrent free has started would
 *    reach into a table the driver is freeing (the table pointer is only a
 *    lookup key for put_pages, never dereferenced once unlinked).
 */
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "gdrhook.h"
#include "nv_p2p_abi.h"
#include "nvp2p.h"
#include "nvp2p_table.h"

static struct {
	typeof(nvidia_p2p_get_pages) *get_pages;
	typeof(nvidia_p2p_put_pages) *put_pages;
	typeof(nvidia_p2p_free_page_table) *free_page_table;
	/* Optional: persistent pinning (no callback). */
	typeof(nvidia_p2p_get_pages_persistent) *get_pages_persistent;
	typeof(nvidia_p2p_put_pages_persistent) *put_pages_persistent;
	/* Optional: DMA mappings for a peer device. */
	typeof(nvidia_p2p_dma_map_pages) *dma_map_pages;
	typeof(nvidia_p2p_free_dma_mapping) *free_dma_mapping;
} nv;

static void gdrhook_nvp2p_put_persistent(void)
{
	NV_PUT(nv.get_pages_persistent, nvidia_p2p_get_pages_persistent);
	NV_PUT(nv.put_pages_persistent, nvidia_p2p_put_pages_persistent);
}

void gdrhook_nvp2p_flavour_put_all(void)
{
	NV_PUT_DMA(nv);
	gdrhook_nvp2p_put_persistent();
	NV_PUT_CORE(nv);
}

bool gdrhook_nvp2p_flavour_resolve(void)
{
	if (nv.get_pages)
		return true;
	if (!NV_GET_ALL(nv))
		return false;
	if (!(NV_GET(nv.get_pages_persistent, nvidia_p2p_get_pages_persistent) &&
	      NV_GET(nv.put_pages_persistent, nvidia_p2p_put_pages_persistent)))
		gdrhook_nvp2p_put_persistent();
	return true;
}

u32 gdrhook_nvp2p_flavour_features(void)
{
	return GDRHOOK_FEATURE_NVP2P |
	       (nv.get_pages_persistent ? GDRHOOK_FEATURE_NVP2P_PERSISTENT : 0);
}

/* GPU pages are 64 KiB. */
const u64 gdrhook_nvp2p_align = 64 * 1024;

static void gdrhook_nvp2p_free_callback(void *data)
{
	int srcu_idx;
	struct gdrhook_pin *pin = gdrhook_callback_begin((u32)(uintptr_t)data, &srcu_idx);

	if (pin) {
		/* Wait for a PIN still reading the table to finish with it. */
		mutex_lock(&pin->lock);
		if (gdrhook_pin_revoke(pin, GDRHOOK_EVENT_REVOKED_NVP2P)) {
			/* We won: the table is ours to hand back, the guide's way. */
			if (pin->nv.dma_map)
				nv.free_dma_mapping(pin->nv.dma_map);
			nv.free_page_table(pin->nv.page_table);
		}
		mutex_unlock(&pin->lock);
	}
	/* late (NULL): unpinned already, the id is retired */
	gdrhook_callback_end(pin, srcu_idx);
}

/*
 * Give the pages (and their DMA mapping) back to the driver; only the
 * owner of the pin calls it, with no lock held.
 */
static void gdrhook_nvp2p_put(struct gdrhook_pin *pin)
{
	struct nvidia_p2p_page_table *pt = pin->nv.page_table;
	int err;

	pin->nv.dma_map = NULL; /* put_pages frees it with the table */
	if (pin->flags & GDRHOOK_PIN_PERSISTENT)
		err = nv.put_pages_persistent(pin->addr, pt, 0);
	else
		err = nv.put_pages(0, 0, pin->addr, pt);
	if (err)
		pr_err("gdrhook: error %d from nvidia_p2p_put_pages\n", err);
	pin->nv.page_table = NULL;
}

static int gdrhook_nvp2p_pin(struct gdrhook_pin *pin,
			     const struct gdrhook_pin_req_k *req)
{
	bool persistent = req->flags & GDRHOOK_PIN_PERSISTENT;
	struct nvidia_p2p_page_table *pt;
	u32 i;
	int err;

	if (!gdrhook_nvp2p_use(pin))
		return -EOPNOTSUPP; /* else release() lets go */
	if (persistent && !nv.get_pages_persistent)
		return -EOPNOTSUPP;
	if (req->peer && !nv.dma_map_pages)
		return -EOPNOTSUPP;

	/*
	 * From here until the addresses are copied a callback may arrive at
	 * any moment, and it frees the table when it wins: it waits for this
	 * lock first. The driver stores the table through the pointer before
	 * it registers the callback.
	 */
	mutex_lock(&pin->lock);
	if (persistent)
		err = nv.get_pages_persistent(req->addr, req->length,
					      &pin->nv.page_table, 0);
	else
		err = nv.get_pages(0, 0, req->addr, req->length,
				   &pin->nv.page_table,
				   gdrhook_nvp2p_free_callback,
				   (void *)(uintptr_t)pin->id);
	if (err) {
		pin->nv.page_table = NULL;
		/* The driver says EINVAL for memory that is not the caller's
		 * GPU memory; keep its answer (ioctl.c turns kernel-internal
		 * errnos into ones user space knows).
		 */
		err = err < 0 ? err : -EIO;
		goto out;
	}
	pt = pin->nv.page_table;

	err = gdrhook_nvp2p_take_table(pin, pt, false);
	if (err)
		goto out;

	if (req->peer) {
		struct nvidia_p2p_dma_mapping *map = NULL;

		err = nv.dma_map_pages(req->peer, pt, &map);
		if (err)
			goto out;
		pin->nv.dma_map = map;
		if (!gdrhook_nvp2p_version_ok(map->version, NVIDIA_P2P_DMA_MAPPING_VERSION) ||
		    map->entries != pt->entries || !map->dma_addresses) {
			err = -EIO;
			goto out;
		}
	}

	for (i = 0; i < pin->page_count; i++)
		pin->bus_addrs[i] = pin->nv.dma_map ?
			pin->nv.dma_map->dma_addresses[i] :
			pt->pages[i]->physical_address;
out:
	/* On failure the table stays in the pin: release() puts it back,
	 * unless a callback wins it first.
	 */
	mutex_unlock(&pin->lock);
	return err;
}

static void gdrhook_nvp2p_release(struct gdrhook_pin *pin, bool revoked)
{
	/* Revoked: the callback already handed the table back. */
	if (pin->nv.page_table && !revoked)
		gdrhook_nvp2p_put(pin);
	gdrhook_nvp2p_unuse(pin);
}

MODULE_INFO(nv_p2p, "desktop");

const struct gdrhook_backend_ops gdrhook_backend_nvp2p = {
	.name = "nv-p2p",
	.pin = gdrhook_nvp2p_pin,
	.release = gdrhook_nvp2p_release,
};
