// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Page-locked host memory, allocated and freed the three ways the driver
// offers (cuMemHostAlloc, cuMemAllocHost, cuMemHostRegister of the
// program's own memory); on the fake driver and on a GPU.
//
// Prints host_alloc_dma_buf=0|1 (CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED)
// and frees_made=3 on stdout, mem_used_delta=0 on stderr (host memory is
// not GPU memory). Exit status 0 when every driver call succeeded.
#include "cuda_checks.h"

#include <cstdio>
#include <cstdlib>

namespace {

constexpr size_t size = 4 << 20;

} // namespace

int main()
{
    if (!current_primary_context())
        return failed("context setup", CUDA_ERROR_UNKNOWN);
    CUdevice dev = 0;
    CHECK_CU(cuCtxGetDevice(&dev));
    int host_dmabuf = 0;
    CHECK_CU(
        cuDeviceGetAttribute(&host_dmabuf, CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED, dev));
    std::printf("host_alloc_dma_buf=%d\n", host_dmabuf);

    void *allocated = nullptr, *page_locked = nullptr;
    CHECK_CU(cuMemHostAlloc(&allocated, size, CU_MEMHOSTALLOC_PORTABLE));
    CHECK_CU(cuMemAllocHost(&page_locked, size));
    void *own = std::aligned_alloc(4096, size);
    if (!own)
        return failed("aligned_alloc", CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_CU(cuMemHostRegister(own, size, 0));
    static_cast<char *>(allocated)[0] = 1; // host memory: the program touches it
    static_cast<char *>(page_locked)[0] = 1;
    CHECK_CU(cuMemHostUnregister(own));
    CHECK_CU(cuMemFreeHost(page_locked));
    CHECK_CU(cuMemFreeHost(allocated));
    std::free(own);
    std::printf("frees_made=3\n");
    std::fprintf(stderr, "mem_used_delta=0\n");
    return 0;
}
