// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * backend_nvp2p.c - pinning through the NVIDIA driver's nvidia_p2p_* API.
 *
 * The functions are resolved with symbol_get() on first use, not linked,
 * so gdrhook.ko loads (and offers dma-buf alone) where nvidia.ko is absent;
 * once resolved they stay referenced until gdrhook.ko is unloaded.
 *
 * Rules from NVIDIA's GPUDirect RDMA guide that shape this file:
 *  - the free callback gets an opaque pointer; we pass the pin's id, so a
 *    callback arriving after the pin is gone is a failed lookup;
 *  - inside the callback only nvidia_p2p_free_dma_mapping() and
 *    nvidia_p2p_free_page_table() may be called, never put_pages;
 *  - the driver may hold its own locks while it calls back, so no lock of
 *    ours is held across any nvidia_p2p_* call (the callback only takes the
 *    id table's spinlock and the event queue's spinlock);
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

static struct {
	typeof(&nvidia_p2p_get_pages) get_pages;
	typeof(&nvidia_p2p_put_pages) put_pages;
	typeof(&nvidia_p2p_free_page_table) free_page_table;
	/* Optional: persistent pinning (no callback). */
	typeof(&nvidia_p2p_get_pages_persistent) get_pages_persistent;
	typeof(&nvidia_p2p_put_pages_persistent) put_pages_persistent;
	/* Optional: DMA mappings for a peer device. */
	typeof(&nvidia_p2p_dma_map_pages) dma_map_pages;
	typeof(&nvidia_p2p_free_dma_mapping) free_dma_mapping;
} nv;
static bool nv_ready; /* written once under nv_lock, read with acquire */
static DEFINE_MUTEX(nv_lock);

/* Resolve a group of symbols all-or-nothing. */
#define NV_GET(field, sym) (nv.field = symbol_get(sym))
#define NV_PUT(field, sym) \
	do { if (nv.field) { symbol_put(sym); nv.field = NULL; } } while (0)

static void gdrhook_nvp2p_put_core(void)
{
	NV_PUT(get_pages, nvidia_p2p_get_pages);
	NV_PUT(put_pages, nvidia_p2p_put_pages);
	NV_PUT(free_page_table, nvidia_p2p_free_page_table);
}

static void gdrhook_nvp2p_put_persistent(void)
{
	NV_PUT(get_pages_persistent, nvidia_p2p_get_pages_persistent);
	NV_PUT(put_pages_persistent, nvidia_p2p_put_pages_persistent);
}

static void gdrhook_nvp2p_put_dma(void)
{
	NV_PUT(dma_map_pages, nvidia_p2p_dma_map_pages);
	NV_PUT(free_dma_mapping, nvidia_p2p_free_dma_mapping);
}

/* Try to resolve the driver; cheap once it has succeeded. */
static bool gdrhook_nvp2p_resolve(void)
{
	if (smp_load_acquire(&nv_ready))
		return true;

	mutex_lock(&nv_lock);
	if (!nv_ready) {
		if (!(NV_GET(get_pages, nvidia_p2p_get_pages) &&
		      NV_GET(put_pages, nvidia_p2p_put_pages) &&
		      NV_GET(free_page_table, nvidia_p2p_free_page_table))) {
			gdrhook_nvp2p_put_core();
		} else {
			if (!(NV_GET(get_pages_persistent, nvidia_p2p_get_pages_persistent) &&
			      NV_GET(put_pages_persistent, nvidia_p2p_put_pages_persistent)))
				gdrhook_nvp2p_put_persistent();
			if (!(NV_GET(dma_map_pages, nvidia_p2p_dma_map_pages) &&
			      NV_GET(free_dma_mapping, nvidia_p2p_free_dma_mapping)))
				gdrhook_nvp2p_put_dma();
			smp_store_release(&nv_ready, true);
		}
	}
	mutex_unlock(&nv_lock);
	return nv_ready;
}

u32 gdrhook_nvp2p_features(void)
{
	if (!gdrhook_nvp2p_resolve())
		return 0;
	return GDRHOOK_FEATURE_NVP2P |
	       (nv.get_pages_persistent ? GDRHOOK_FEATURE_NVP2P_PERSISTENT : 0);
}

void gdrhook_nvp2p_exit(void)
{
	gdrhook_nvp2p_put_dma();
	gdrhook_nvp2p_put_persistent();
	gdrhook_nvp2p_put_core();
	nv_ready = false;
}

static void gdrhook_nvp2p_free_callback(void *data)
{
	struct gdrhook_pin *pin = gdrhook_pin_get_by_id((u32)(uintptr_t)data);

	if (!pin)
		return; /* late: unpinned already, the id is retired */
	if (gdrhook_pin_revoke(pin, GDRHOOK_EVENT_REVOKED_NVP2P)) {
		struct nvidia_p2p_dma_mapping *map = READ_ONCE(pin->nv.dma_map);

		/* We won: the table is ours to hand back, the guide's way. */
		if (map)
			nv.free_dma_mapping(map);
		nv.free_page_table(READ_ONCE(pin->nv.page_table));
	}
	gdrhook_pin_put(pin);
}

/*
 * Give the pages (and their DMA mapping) back to the driver; only the
 * owner of the pin calls it, with no lock held.
 */
static void gdrhook_nvp2p_put(struct gdrhook_pin *pin)
{
	struct nvidia_p2p_page_table *pt = pin->nv.page_table;
	int err;

	WRITE_ONCE(pin->nv.dma_map, NULL); /* put_pages frees it with the table */
	if (pin->flags & GDRHOOK_PIN_PERSISTENT)
		err = nv.put_pages_persistent(pin->addr, pt, 0);
	else
		err = nv.put_pages(0, 0, pin->addr, pt);
	if (err)
		pr_err("gdrhook: error %d from nvidia_p2p_put_pages\n", err);
	pin->nv.page_table = NULL;
}

static u64 gdrhook_nvp2p_page_bytes(u32 type)
{
	switch (type) {
	case NVIDIA_P2P_PAGE_SIZE_4KB:
		return 4096;
	case NVIDIA_P2P_PAGE_SIZE_64KB:
		return 64 * 1024;
	case NVIDIA_P2P_PAGE_SIZE_128KB:
		return 128 * 1024;
	default:
		return 0;
	}
}

/* The driver's answer must describe exactly the range we asked for. */
static int gdrhook_nvp2p_check_table(const struct gdrhook_pin *pin,
				     const struct nvidia_p2p_page_table *pt)
{
	u64 ps;

	if (!pt || !NVIDIA_P2P_VERSION_OK(pt->version, NVIDIA_P2P_PAGE_TABLE_VERSION))
		return -EIO;
	ps = gdrhook_nvp2p_page_bytes(pt->page_size);
	if (!ps || pt->entries == 0 || !pt->pages ||
	    (u64)pt->entries * ps < pin->length ||
	    (u64)(pt->entries - 1) * ps >= pin->length)
		return -EIO;
	return 0;
}

static int gdrhook_nvp2p_pin(struct gdrhook_pin *pin,
			     const struct gdrhook_pin_req_k *req)
{
	bool persistent = req->flags & GDRHOOK_PIN_PERSISTENT;
	struct nvidia_p2p_page_table *pt;
	u32 i;
	int err;

	if (!gdrhook_nvp2p_resolve())
		return -EOPNOTSUPP;
	if (persistent && !nv.get_pages_persistent)
		return -EOPNOTSUPP;
	if (req->peer && !nv.dma_map_pages)
		return -EOPNOTSUPP;

	/*
	 * The driver stores the table through the pointer before it
	 * registers the callback, so a callback that fires at once finds it
	 * in pin->nv.page_table.
	 */
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
		 * GPU memory; keep its answer. */
		return err < 0 ? err : -EIO;
	}
	pt = pin->nv.page_table;

	err = gdrhook_nvp2p_check_table(pin, pt);
	if (err)
		goto undo;
	pin->page_size = gdrhook_nvp2p_page_bytes(pt->page_size);
	pin->page_count = pt->entries;

	if (req->peer) {
		struct nvidia_p2p_dma_mapping *map = NULL;

		err = nv.dma_map_pages(req->peer, pt, &map);
		if (err)
			goto undo;
		WRITE_ONCE(pin->nv.dma_map, map);
		if (!NVIDIA_P2P_VERSION_OK(map->version, NVIDIA_P2P_DMA_MAPPING_VERSION) ||
		    map->entries != pt->entries || !map->dma_addresses) {
			err = -EIO;
			goto undo;
		}
	}

	pin->bus_addrs = kvmalloc_array(pin->page_count, sizeof(u64),
					GFP_KERNEL | __GFP_NOWARN);
	if (!pin->bus_addrs) {
		err = -ENOMEM;
		goto undo;
	}
	for (i = 0; i < pin->page_count; i++)
		pin->bus_addrs[i] = pin->nv.dma_map ?
			pin->nv.dma_map->dma_addresses[i] :
			pt->pages[i]->physical_address;
	return 0;

undo:
	/* Undo only if no callback has taken the table meanwhile. */
	if (atomic_cmpxchg(&pin->state, GDRHOOK_PIN_PINNING,
			   GDRHOOK_PIN_UNPINNING) == GDRHOOK_PIN_PINNING)
		gdrhook_nvp2p_put(pin);
	return err;
}

static void gdrhook_nvp2p_release(struct gdrhook_pin *pin, bool revoked)
{
	/* Revoked: the callback already handed the table back. */
	if (!revoked)
		gdrhook_nvp2p_put(pin);
}

const struct gdrhook_backend_ops gdrhook_backend_nvp2p = {
	.name = "nv-p2p",
	.pin = gdrhook_nvp2p_pin,
	.release = gdrhook_nvp2p_release,
};
