/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * TEST ONLY: a Tegra nv-p2p.h, as L4T's nvidia-oot tree provides it on
 * Jetson Orin and DRIVE, written for gdrhook's tests from section 7.4 of
 * NVIDIA's GPUDirect RDMA guide ("Porting to Tegra"). The test provider
 * (gdrhook_tp_tegra.c) implements it; gdrhook.ko built with
 * NV_P2P_H=this file probes Tegra's signatures here and builds its Tegra
 * flavour (kmod/probes/HAVE_NV_P2P_TEGRA.sh).
 *
 * The rules a client must keep: address and length are multiples of
 * 4 KiB; free_callback and data are not NULL; the free callback runs
 * whenever the table goes, when the memory is freed and also inside
 * nvidia_p2p_put_pages(), and it is where the client calls
 * nvidia_p2p_free_dma_mapping() and nvidia_p2p_free_page_table(), once.
 */
#ifndef GDRHOOK_TEST_TEGRA_NV_P2P_H
#define GDRHOOK_TEST_TEGRA_NV_P2P_H

#include <linux/dma-direction.h>
#include <linux/types.h>

struct device;
struct page;

enum nvidia_p2p_page_size_type {
	NVIDIA_P2P_PAGE_SIZE_4KB = 0,
	NVIDIA_P2P_PAGE_SIZE_64KB,
	NVIDIA_P2P_PAGE_SIZE_128KB,
	NVIDIA_P2P_PAGE_SIZE_COUNT
};

#define NVIDIA_P2P_PAGE_TABLE_VERSION 0x00010000u
#define NVIDIA_P2P_DMA_MAPPING_VERSION 0x00010000u

/* The leading fields of L4T's layout; the provider keeps its own state
 * around it.
 */
struct nvidia_p2p_page_table {
	u32 version;
	u32 page_size;
	u64 size;
	u32 entries;
	struct page **pages;
	u64 vaddr;
	u32 mapped;
};

struct nvidia_p2p_dma_mapping {
	u32 version;
	dma_addr_t *hw_address;
	u32 *hw_len;
	u32 entries;
	struct device *dev;
	struct nvidia_p2p_page_table *page_table;
	enum dma_data_direction direction;
};

int nvidia_p2p_get_pages(u64 vaddr, u64 size,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);
int nvidia_p2p_put_pages(struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_dma_map_pages(struct device *dev,
			     struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **map,
			     enum dma_data_direction direction);
int nvidia_p2p_dma_unmap_pages(struct nvidia_p2p_dma_mapping *map);
int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping);

#endif /* GDRHOOK_TEST_TEGRA_NV_P2P_H */
