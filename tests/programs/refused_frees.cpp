// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Frees the driver refuses, between live allocations that pin-on-alloc
// pinned: an address inside an allocation (cuMemFree and cuMemFreeAsync of
// base + 1 MiB, and of the last byte; cuMemFreeHost inside page-locked
// memory, pinned where the device exports host memory; cuMemHostUnregister
// inside a registered range; cuMemUnmap of half a VMM mapping, or from
// inside one into the next), and an address in no allocation.
// The driver answers each with an error and frees nothing; under the shim
// nothing of the live allocations may be unpinned either
// (tests/shim/test_refused_frees.cpp). Then the real frees.
//
// Prints each refused call's result (`refused NAME rc=N`, the same plain
// and hooked) and frees_made=10 on stdout, mem_used_delta=N on stderr
// (tests/gpu/run.sh's row). On the fake driver and on a GPU. Exit status 0
// when every refusal was one and the real frees succeeded.
#include "cuda_checks.h"

#include <cstdio>
#include <cstdlib>

namespace {

constexpr size_t size = 4 << 20;

// A call that must fail: prints its result; false when it succeeded.
bool refused(const char *name, CUresult rc)
{
    std::printf("refused %s rc=%d\n", name, static_cast<int>(rc));
    return rc != CUDA_SUCCESS;
}

// Three VMM mappings side by side in one reservation: 2, 2 and 1
// granules, each of its own physical memory.
struct Mappings {
    size_t granule = 0;
    CUdeviceptr reserved = 0;
    CUdeviceptr start[3] = {};
    size_t size[3] = {};
    CUmemGenericAllocationHandle handle[3] = {};
    size_t total() const { return size[0] + size[1] + size[2]; }
};

int map_three(Mappings &m)
{
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CHECK_CU(cuMemGetAllocationGranularity(&m.granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    const size_t granules[3] = {2, 2, 1};
    for (int i = 0; i < 3; ++i)
        m.size[i] = granules[i] * m.granule;
    CHECK_CU(cuMemAddressReserve(&m.reserved, m.total(), 0, 0, 0));
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUdeviceptr at = m.reserved;
    for (int i = 0; i < 3; ++i) {
        CHECK_CU(cuMemCreate(&m.handle[i], m.size[i], &prop, 0));
        CHECK_CU(cuMemMap(at, m.size[i], 0, m.handle[i], 0));
        CHECK_CU(cuMemSetAccess(at, m.size[i], &access, 1));
        m.start[i] = at;
        at += m.size[i];
    }
    return 0;
}

// The first two mappings at once (whole neighbours: allowed), the third,
// then the physical memory and the reservation.
int unmap_three(const Mappings &m)
{
    CHECK_CU(cuMemUnmap(m.start[0], m.size[0] + m.size[1]));
    CHECK_CU(cuMemUnmap(m.start[2], m.size[2]));
    for (CUmemGenericAllocationHandle handle : m.handle)
        CHECK_CU(cuMemRelease(handle));
    CHECK_CU(cuMemAddressFree(m.reserved, m.total()));
    return 0;
}

} // namespace

int main()
{
    if (!current_primary_context())
        return failed("context setup", CUDA_ERROR_UNKNOWN);
    const long long used_before = device_bytes_in_use();
    CUdeviceptr first = 0, second = 0;
    CHECK_CU(cuMemAlloc(&first, size));
    CHECK_CU(cuMemAlloc(&second, size));
    CUstream stream = nullptr;
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    void *page_locked = nullptr;
    CHECK_CU(cuMemAllocHost(&page_locked, size));
    char *own = static_cast<char *>(std::aligned_alloc(4096, size));
    if (!own)
        return failed("aligned_alloc", CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_CU(cuMemHostRegister(own, size, 0));
    Mappings vmm;
    if (map_three(vmm))
        return 1;

    bool all = refused("cuMemFree(first + 1 MiB)", cuMemFree(first + (1 << 20)));
    all &= refused("cuMemFree(second + size - 1)", cuMemFree(second + size - 1));
    all &= refused("cuMemFreeAsync(first + 64 KiB)", cuMemFreeAsync(first + (64 << 10), stream));
    all &= refused("cuMemFreeHost(page_locked + 4 KiB)",
                   cuMemFreeHost(static_cast<char *>(page_locked) + 4096));
    all &= refused("cuMemHostUnregister(own + 4 KiB)", cuMemHostUnregister(own + 4096));
    const size_t granule = vmm.granule;
    all &= refused("cuMemUnmap(second half of a mapping)",
                   cuMemUnmap(vmm.start[0] + granule, granule));
    all &= refused("cuMemUnmap(first half of a mapping)", cuMemUnmap(vmm.start[1], granule));
    all &= refused("cuMemUnmap(from inside one mapping into the next)",
                   cuMemUnmap(vmm.start[0] + granule, 2 * granule));
    // Past both: an address the driver knows nothing of.
    const CUdeviceptr beyond = (first > second ? first : second) + (64 << 20);
    all &= refused("cuMemFree(no allocation)", cuMemFree(beyond));
    CHECK_CU(cuStreamSynchronize(stream));
    if (!all)
        return failed("a free the driver should have refused", CUDA_ERROR_UNKNOWN);

    if (unmap_three(vmm))
        return 1;
    CHECK_CU(cuMemHostUnregister(own));
    std::free(own);
    CHECK_CU(cuMemFreeHost(page_locked));
    CHECK_CU(cuMemFree(second));
    CHECK_CU(cuMemFree(first));
    CHECK_CU(cuStreamDestroy(stream));
    std::printf("frees_made=10\n");
    std::fprintf(stderr, "mem_used_delta=%lld\n", device_bytes_in_use() - used_before);
    return 0;
}
