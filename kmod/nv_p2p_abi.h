/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * The nvidia_p2p_* interface as gdrhook uses it.
 *
 * Written from NVIDIA's GPUDirect RDMA guide, not copied from nv-p2p.h: the
 * layouts and prototypes below are the binary interface nvidia.ko exports,
 * so they must match it field for field. Shared by gdrhook.ko (which calls
 * these through symbol_get(), never by link) and by the test provider
 * (which implements them over ordinary process memory).
 */
#ifndef GDRHOOK_NV_P2P_ABI_H
#define GDRHOOK_NV_P2P_ABI_H

#include <linux/types.h>

#include "nv_p2p_common_abi.h"

struct pci_dev;

struct nvidia_p2p_page {
	u64 physical_address;
	union nvidia_p2p_request_registers {
		struct {
			u32 wreqmb_h;
			u32 rreqmb_h;
			u32 rreqmb_0;
			u32 reserved[3];
		} fermi;
	} registers;
};

#define NVIDIA_P2P_PAGE_TABLE_VERSION 0x00010002u
#define NVIDIA_P2P_DMA_MAPPING_VERSION 0x00020003u

struct nvidia_p2p_page_table {
	u32 version;
	u32 page_size; /* enum nvidia_p2p_page_size_type */
	struct nvidia_p2p_page **pages;
	u32 entries;
	u8 *gpu_uuid;
	u32 flags;
};

struct nvidia_p2p_dma_mapping {
	u32 version;
	enum nvidia_p2p_page_size_type page_size_type;
	u32 entries;
	u64 *dma_addresses;
	void *private;
	struct pci_dev *pci_dev;
};

int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space,
			 u64 virtual_address, u64 length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);
int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space,
			 u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_get_pages_persistent(u64 virtual_address, u64 length,
				    struct nvidia_p2p_page_table **page_table,
				    u32 flags);
int nvidia_p2p_put_pages_persistent(u64 virtual_address,
				    struct nvidia_p2p_page_table *page_table,
				    u32 flags);
int nvidia_p2p_dma_map_pages(struct pci_dev *peer,
			     struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping);
int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer,
			       struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping);
int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping);

#endif /* GDRHOOK_NV_P2P_ABI_H */
