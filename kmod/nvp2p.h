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
 * Taking and letting go of the driver's symbols: SLOT is where a flavour
 * keeps the function, SYMS the flavour's struct of them, one pointer per
 * function, named as below. Both flavours resolve the same names (with
 * their own types): the three no pin can do without, all-or-nothing, and
 * the two of a peer's DMA mapping, as a pair. Macros, because
 * symbol_get() and symbol_put() take the symbol's name, not a value.
 */
#define NV_GET(slot, sym) ((slot) = symbol_get(sym))
#define NV_PUT(slot, sym) \
	do { if (slot) { symbol_put(sym); (slot) = NULL; } } while (0)
#define NV_GET_CORE(syms) (NV_GET((syms).get_pages, nvidia_p2p_get_pages) && \
		NV_GET((syms).put_pages, nvidia_p2p_put_pages) && \
		NV_GET((syms).free_page_table, nvidia_p2p_free_page_table))
#define NV_PUT_CORE(syms) do { \
		NV_PUT((syms).get_pages, nvidia_p2p_get_pages); \
		NV_PUT((syms).put_pages, nvidia_p2p_put_pages); \
		NV_PUT((syms).free_page_table, nvidia_p2p_free_page_table); \
	} while (0)
#define NV_GET_DMA(syms) \
	(NV_GET((syms).dma_map_pages, nvidia_p2p_dma_map_pages) && \
	 NV_GET((syms).free_dma_mapping, nvidia_p2p_free_dma_mapping))
#define NV_PUT_DMA(syms) do { \
		NV_PUT((syms).dma_map_pages, nvidia_p2p_dma_map_pages); \
		NV_PUT((syms).free_dma_mapping, nvidia_p2p_free_dma_mapping); \
	} while (0)
/*
 * What every flavour resolves: the core all-or-nothing (false, holding
 * none of it, when the driver is not loaded), then the DMA pair as a pair.
 */
#define NV_GET_ALL(syms) ({ \
		bool got_core_ = NV_GET_CORE(syms); \
		if (!got_core_) \
			NV_PUT_CORE(syms); \
		else if (!NV_GET_DMA(syms)) \
			NV_PUT_DMA(syms); \
		got_core_; \
	})
void gdrhook_nvp2p_flavour_put_all(void);
u32 gdrhook_nvp2p_flavour_features(void);

#endif /* GDRHOOK_NVP2P_H */
