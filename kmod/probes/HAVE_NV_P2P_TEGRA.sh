#!/bin/sh
# The nvidia_p2p_* API of Tegra (Jetson Orin, DRIVE; section 7.4 of
# NVIDIA's GPUDirect RDMA guide): get_pages without tokens, put_pages and
# dma_unmap_pages taking the table or mapping alone, dma_map_pages for a
# struct device with a direction. Looked for in NV_P2P_H (a path: the
# nv-p2p.h the module is built against) or else <linux/nv-p2p.h> on the
# kernel's include path (L4T's nvidia-oot tree provides it). No header,
# or the desktop one, fails to compile: the desktop flavour is built.
# A pointer of the wrong type is made an error here, whatever the
# kernel's flags say.
if [ -n "${NV_P2P_H:-}" ]; then
	echo "#include \"$NV_P2P_H\""
else
	echo '#include <linux/nv-p2p.h>'
fi
cat <<'C'
#pragma GCC diagnostic error "-Wincompatible-pointer-types"
int (*get)(u64, u64, struct nvidia_p2p_page_table **, void (*)(void *),
	   void *) = nvidia_p2p_get_pages;
int (*put)(struct nvidia_p2p_page_table *) = nvidia_p2p_put_pages;
int (*map)(struct device *, struct nvidia_p2p_page_table *,
	   struct nvidia_p2p_dma_mapping **,
	   enum dma_data_direction) = nvidia_p2p_dma_map_pages;
int (*unmap)(struct nvidia_p2p_dma_mapping *) = nvidia_p2p_dma_unmap_pages;
int (*free_table)(struct nvidia_p2p_page_table *) = nvidia_p2p_free_page_table;
int (*free_map)(struct nvidia_p2p_dma_mapping *) = nvidia_p2p_free_dma_mapping;
C
