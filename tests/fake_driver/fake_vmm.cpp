// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The virtual memory management calls of the fake driver: reserve an
// address range, create physical handles, map and unmap them.
#include "fake_state.h"

#include <sys/mman.h>

using namespace fake;

extern "C" {

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *,
                                       CUmemAllocationGranularity_flags)
{
    if (!granularity)
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = 2 << 20;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t, CUdeviceptr, unsigned long long)
{
    if (CUresult injected = count_call("cuMemAddressReserve"))
        return injected;
    if (!ptr || !size)
        return CUDA_ERROR_INVALID_VALUE;
    void *range =
        mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = reinterpret_cast<CUdeviceptr>(range);
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    if (CUresult injected = count_call("cuMemAddressFree"))
        return injected;
    if (!ptr || !size)
        return CUDA_ERROR_INVALID_VALUE;
    return munmap(reinterpret_cast<void *>(ptr), size) == 0 ? CUDA_SUCCESS
                                                            : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long)
{
    if (CUresult injected = count_call("cuMemCreate"))
        return injected;
    if (!handle || !size)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(driver().mutex);
    uint64_t made = driver().next_handle++;
    driver().physical[made] = size;
    if (prop && prop->allocFlags.compressionType == CU_MEM_ALLOCATION_COMP_GENERIC)
        driver().compressible[made] = true;
    *handle = made;
    return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    if (CUresult injected = count_call("cuMemRelease"))
        return injected;
    std::lock_guard<std::mutex> lock(driver().mutex);
    driver().compressible.erase(handle);
    return driver().physical.erase(handle) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t, CUmemGenericAllocationHandle handle,
                  unsigned long long)
{
    if (CUresult injected = count_call("cuMemMap"))
        return injected;
    {
        std::lock_guard<std::mutex> lock(driver().mutex);
        if (!driver().physical.count(handle))
            return CUDA_ERROR_INVALID_VALUE;
        if (driver().compressible.count(handle))
            driver().compressible_mapped[ptr] = size;
    }
    void *mapped = mmap(reinterpret_cast<void *>(ptr), size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (mapped == MAP_FAILED)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(driver().mutex);
    driver().mapped[ptr] = size;
    driver().buffer_ids[ptr] = driver().next_buffer_id++; // each mapping its own
    return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    if (CUresult injected = count_call("cuMemUnmap"))
        return injected;
    {
        std::lock_guard<std::mutex> lock(driver().mutex);
        // Whole mappings only: a range that starts or ends inside one is
        // refused, as the H200's driver (580.159.04) refuses it; two whole
        // neighbours at once are not.
        uintptr_t start = 0;
        size_t length = 0;
        if (size == 0 || (mapping_containing(ptr, start, length) && start != ptr) ||
            (mapping_containing(ptr + size - 1, start, length) && start + length != ptr + size))
            return CUDA_ERROR_INVALID_VALUE;
        provider_free_range(ptr, size);
        auto &mapped = driver().mapped;
        for (auto it = mapped.lower_bound(ptr); it != mapped.end() && it->first < ptr + size;) {
            driver().buffer_ids.erase(it->first);
            it = mapped.erase(it);
        }
        driver().compressible_mapped.erase(ptr);
    }
    void *reserved = mmap(reinterpret_cast<void *>(ptr), size, PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    return reserved == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t)
{
    return CUDA_SUCCESS;
}

} // extern "C"
