/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * The nv-p2p backend in two halves: holding the driver's symbols
 * (nvp2p_driver.c, the same for every flavour) and one flavour of the
 * nvidia_p2p_* API, chosen at build time by probes/HAVE_NV_P2P_TEGRA.sh
 * (Kbuild links exactly one): backend_nvp2p.c (desktop and server GPUs)
 * or backend_nvp2p_tegra.c (Jetson Orin, DRIVE).
 */
#ifndef GDRHOOK_NVP2P_H
#define GDRHOOK_NVP2P_H

#include <linux/types.h>

struct gdrhook_pin;

/* The pin starts holding the driver: false if it is not loaded. */
bool gdrhook_nvp2p_use(struct gdrhook_pin *pin);
/* The pin stops holding the driver, if it held it; the last one lets go. */
void gdrhook_nvp2p_unuse(struct gdrhook_pin *pin);
/* Bytes of an enum nvidia_p2p_page_size_type; 0 for an unknown one. */
u64 gdrhook_nvp2p_page_bytes(u32 type);

/* A version has its major in the high 16 bits; the driver's table is
 * compatible when the majors match and ours is not newer than it.
 */
static inline bool gdrhook_nvp2p_version_ok(u32 have, u32 want)
{
	return have >> 16 == want >> 16 && (have & 0xffff) >= (want & 0xffff);
}

/*
 * What each flavour provides, called with the driver lock held: resolve
 * its symbols (all-or-nothing for the ones it cannot do without; false
 * when the driver is not loaded), let every one of them go, and the
 * GDRHOOK_FEATURE_* bits its resolved symbols offer.
 */
bool gdrhook_nvp2p_flavour_resolve(void);
/*
 * A flavour holds its symbols in a struct named nv, one pointer per
 * function, named as below. Both resolve the same names (with the
 * flavour's types): the three no pin can do without, all-or-nothing, and
 * the two of a peer's DMA mapping, as a pair.
 */
#define NV_GET(field, sym) (nv.field = symbol_get(sym))
#define NV_PUT(field, sym) \
	do { if (nv.field) { symbol_put(sym); nv.field = NULL; } } while (0)
#define NV_GET_CORE() (NV_GET(get_pages, nvidia_p2p_get_pages) && \
		       NV_GET(put_pages, nvidia_p2p_put_pages) && \
		       NV_GET(free_page_table, nvidia_p2p_free_page_table))
#define NV_PUT_CORE() do { \
		NV_PUT(get_pages, nvidia_p2p_get_pages); \
		NV_PUT(put_pages, nvidia_p2p_put_pages); \
		NV_PUT(free_page_table, nvidia_p2p_free_page_table); \
	} while (0)
#define NV_GET_DMA() (NV_GET(dma_map_pages, nvidia_p2p_dma_map_pages) && \
		      NV_GET(free_dma_mapping, nvidia_p2p_free_dma_mapping))
#define NV_PUT_DMA() do { \
		NV_PUT(dma_map_pages, nvidia_p2p_dma_map_pages); \
		NV_PUT(free_dma_mapping, nvidia_p2p_free_dma_mapping); \
	} while (0)
void gdrhook_nvp2p_flavour_put_all(void);
u32 gdrhook_nvp2p_flavour_features(void);

#endif /* GDRHOOK_NVP2P_H */
