// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the test registration caches of tests/ucx/ucx_rcache.cpp and
// tests/gpu/ucx_rcache_py.cpp keep of a region, from the driver: the
// buffer it covered (the oracle of a stale hit) and, as UCX's IB memory
// domain holds a dma-buf MR, a dma-buf of it.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace cuda_region {

// CU_POINTER_ATTRIBUTE_BUFFER_ID of addr, 0 when the driver has none.
inline unsigned long long buffer_id_of(uint64_t addr)
{
    unsigned long long id = 0;
    if (cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, addr) != CUDA_SUCCESS)
        return 0;
    return id;
}

// Whether the device exports its memory as dma-bufs.
inline bool exports_dmabuf(CUdevice device)
{
    int supported = 0;
    cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, device);
    return supported != 0;
}

// A dma-buf fd of [start, end), or -1 when the driver refuses.
inline int export_dmabuf(uint64_t start, uint64_t end)
{
    int fd = -1;
    if (cuMemGetHandleForAddressRange(&fd, start, end - start, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                      0) != CUDA_SUCCESS)
        return -1;
    return fd;
}

} // namespace cuda_region
