/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * The page size codes of the nvidia_p2p_* interface, the same in the
 * desktop one (nv_p2p_abi.h) and Tegra's (L4T's nv-p2p.h, which the Tegra
 * flavour includes instead).
 */
#ifndef GDRHOOK_NV_P2P_COMMON_ABI_H
#define GDRHOOK_NV_P2P_COMMON_ABI_H

#include <linux/types.h>

enum nvidia_p2p_page_size_type {
	NVIDIA_P2P_PAGE_SIZE_4KB = 0,
	NVIDIA_P2P_PAGE_SIZE_64KB,
	NVIDIA_P2P_PAGE_SIZE_128KB,
	NVIDIA_P2P_PAGE_SIZE_COUNT
};

#endif /* GDRHOOK_NV_P2P_COMMON_ABI_H */
