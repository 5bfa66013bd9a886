// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Pinning through the nvidia_p2p_* API of Tegra (Jetson Orin, DRIVE):
 * the flavour built when probes/HAVE_NV_P2P_TEGRA.sh finds Tegra's
 * signatures in the nv-p2p.h the module is built against (nvp2p.h).
 *
 * What differs from the desktop flavour (section 7.4 of NVIDIA's
 * GPUDirect RDMA guide): no tokens; the peer is a struct device with a
 * DMA direction; address and length are multiples of 4 KiB; there is no
 * persistent pinning; and the free callback runs whenever the table goes,
 * inside nvidia_p2p_put_pages() too. So here, unlike the desktop, the
 * callback is the one place that frees: its (one) run hands the DMA
 * mapping and the pages back (free_dma_mapping, free_page_table), and
 * unpin only calls put_pages, which runs the callback. Freeing in both
 * places would free twice. The table pointer itself stays the driver's
 * handle for us until put_pages (L4T's put_pages unregisters the table's
 * MMU notifier, and its free_page_table does not free the table), so
 * every table is put exactly once, after a revocation too.
 *
 * The ordering argument:
 *  - the callback gets the pin itself as its data, not its id: it must
 *    free even when our own put_pages calls it, after the id is retired.
 *    The pin stays allocated until release() has seen the callback's last
 *    act, complete(callback_done), which is safe to free after (complete()
 *    holds its wait lock until it is done);
 *  - PIN holds pin->lock from before get_pages until it has copied the
 *    addresses; the callback takes it before freeing, so a callback that
 *    comes during PIN waits and PIN never reads freed pages;
 *  - the callback revokes (state machine, event) only when it still finds
 *    the pin by id: the memory was freed under us. Not finding it means
 *    the owner is tearing the pin down (UNPIN, close, a failed PIN): no
 *    event, but it frees all the same. What it frees it frees once
 *    (table_freed, under pin->lock), whoever called it;
 *  - release() calls put_pages with no lock of ours held (put_pages runs
 *    the callback, which takes pin->lock). The table is still the driver's
 *    handle then, whether its callback has run, is running (put_pages
 *    waits for it and runs no second one) or has not run (put_pages runs
 *    it): so an unpin racing the memory's free never hands the driver a
 *    table it has freed. When put_pages returns the callback has run, and
 *    release() waits for callback_done before the pin goes;
 *  - a revoking callback found the pin and counted itself in it, so the
 *    owner's retire waits for it to finish before release() runs.
 */
#include <linux/dma-direction.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/slab.h>

/*
 * Tegra's structs and prototypes from the nv-p2p.h the probe found Tegra's
 * signatures in (gdrhook_config.h names NV_P2P_H's path), not a copy of
 * our own: the module reads the layout of the driver it is built for.
 */
#include "gdrhook_config.h"
#ifdef GDRHOOK_NV_P2P_H
#include GDRHOOK_NV_P2P_H
#else
#include <linux/nv-p2p.h>
#endif

#include "gdrhook.h"
#include "nvp2p.h"
#include "nvp2p_table.h"

static struct {
	typeof(nvidia_p2p_get_pages) *get_pages;
	typeof(nvidia_p2p_put_pages) *put_pages;
	typeof(nvidia_p2p_free_page_table) *free_page_table;
	/* Optional: DMA mappings for a peer device. */
	typeof(nvidia_p2p_dma_map_pages) *dma_map_pages;
	typeof(nvidia_p2p_free_dma_mapping) *free_dma_mapping;
} nv;

void gdrhook_nvp2p_flavour_put_all(void)
{
	NV_PUT_DMA(nv);
	NV_PUT_CORE(nv);
}

bool gdrhook_nvp2p_flavour_resolve(void)
{
	return nv.get_pages || NV_GET_ALL(nv);
}

u32 gdrhook_nvp2p_flavour_features(void)
{
	return GDRHOOK_FEATURE_NVP2P | GDRHOOK_FEATURE_NVP2P_TEGRA;
}

/* The guide's rule for Tegra: 4 KiB, not the desktop's 64 KiB. */
const u64 gdrhook_nvp2p_align = 4096;

/* Hand the mapping, then the pages, back, once; in the callback only. */
static void gdrhook_tegra_free_table(struct gdrhook_pin *pin)
{
	lockdep_assert_held(&pin->lock);
	if (pin->nv.table_freed)
		return;
	pin->nv.table_freed = true;
	if (pin->nv.dma_map)
		nv.free_dma_mapping(pin->nv.dma_map);
	pin->nv.dma_map = NULL;
	nv.free_page_table(pin->nv.page_table);
}

static void gdrhook_tegra_free_callback(void *data)
{
	struct gdrhook_pin *pin = data; /* allocated until callback_done */
	int srcu_idx;
	struct gdrhook_pin *found = gdrhook_callback_begin(pin->id, &srcu_idx);

	/* Wait for a PIN still reading the table to finish with it. */
	mutex_lock(&pin->lock);
	/* Found: freed under us, revoke. Not found: the owner is putting it. */
	if (found == pin)
		gdrhook_pin_revoke(pin, GDRHOOK_EVENT_REVOKED_NVP2P);
	gdrhook_tegra_free_table(pin);
	mutex_unlock(&pin->lock);
	/* The last touch of the pin; then only the SRCU section is left. */
	complete(&pin->nv.callback_done);
	gdrhook_callback_end(found, srcu_idx);
}

/* Tegra's mapping may merge pages into one entry (hw_len): split them. */
static int gdrhook_tegra_copy_dma(struct gdrhook_pin *pin,
				  const struct nvidia_p2p_dma_mapping *map)
{
	u64 n = 0, off;
	u32 i;

	if (!gdrhook_nvp2p_version_ok(map->version, NVIDIA_P2P_DMA_MAPPING_VERSION) ||
	    !map->hw_address || !map->hw_len)
		return -EIO;
	for (i = 0; i < map->entries; i++) {
		if (!map->hw_len[i] || map->hw_len[i] % pin->page_size)
			return -EIO;
		for (off = 0; off < map->hw_len[i]; off += pin->page_size) {
			if (n == pin->page_count)
				return -EIO;
			pin->bus_addrs[n++] = map->hw_address[i] + off;
		}
	}
	return n == pin->page_count ? 0 : -EIO;
}

static int gdrhook_tegra_pin(struct gdrhook_pin *pin,
			     const struct gdrhook_pin_req_k *req)
{
	struct nvidia_p2p_dma_mapping *map = NULL;
	struct nvidia_p2p_page_table *pt;
	u64 i;
	int err;

	if (req->flags & GDRHOOK_PIN_PERSISTENT)
		return -EOPNOTSUPP; /* Tegra has no persistent pinning */
	if (!gdrhook_nvp2p_use(pin))
		return -EOPNOTSUPP; /* else release() lets go */
	if (req->peer && !nv.dma_map_pages)
		return -EOPNOTSUPP;
	init_completion(&pin->nv.callback_done);

	/* Until the addresses are copied, a callback waits for this lock. */
	mutex_lock(&pin->lock);
	err = nv.get_pages(req->addr, req->length, &pin->nv.page_table,
			   gdrhook_tegra_free_callback, pin);
	if (err) {
		pin->nv.page_table = NULL;
		err = err < 0 ? err : -EIO;
		goto out;
	}
	pt = pin->nv.page_table;
	pin->nv.callback_owed = !!pt; /* a table to put, its callback to come */

	/* Tegra's pages end where the range does. */
	err = gdrhook_nvp2p_take_table(pin, pt, true);
	if (err)
		goto out;
	if (req->peer) {
		err = nv.dma_map_pages(&req->peer->dev, pt, &map, DMA_BIDIRECTIONAL);
		if (err)
			goto out;
		pin->nv.dma_map = map;
		err = gdrhook_tegra_copy_dma(pin, map);
		goto out;
	}
	for (i = 0; i < pin->page_count; i++)
		pin->bus_addrs[i] = page_to_phys(pt->pages[i]);
out:
	/* On failure the table stays in the pin: release() puts it. */
	mutex_unlock(&pin->lock);
	return err;
}

static void gdrhook_tegra_release(struct gdrhook_pin *pin, bool revoked)
{
	int err;

	/* Revoked or not: the callback hands the pages back, the put the handle. */
	if (pin->nv.callback_owed) {
		err = nv.put_pages(pin->nv.page_table);
		/* A driver that failed put_pages did not call back: nothing
		 * to wait for (and nothing freed twice).
		 */
		if (!WARN_ONCE(err, "gdrhook: error %d from nvidia_p2p_put_pages\n", err))
			wait_for_completion(&pin->nv.callback_done);
		pin->nv.callback_owed = false;
	}
	pin->nv.page_table = NULL;
	gdrhook_nvp2p_unuse(pin);
}

MODULE_INFO(nv_p2p, "tegra");

const struct gdrhook_backend_ops gdrhook_backend_nvp2p = {
	.name = "nv-p2p",
	.pin = gdrhook_tegra_pin,
	.release = gdrhook_tegra_release,
};
