// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A driver-API program linked with -lcuda (built on the GPU machine by
// tests/gpu/build_programs.sh). It counts the deallocations it makes and
// prints "frees_made=N"; run under the shim, the event log must hold exactly
// N successful free events.
#include "driver_program.h"

int main()
{
    const CUdevice device = use_primary_context();
    const long long used_at_start = device_bytes_in_use();
    mark();

    unsigned long long reused = 0;
    CUdeviceptr previous = 0;
    for (int i = 0; i < 100; ++i) {
        CUdeviceptr p;
        CHECK(cuMemAlloc(&p, 1 << 20));
        CHECK(cuMemsetD8(p, static_cast<unsigned char>(i), 1 << 20));
        reused += p == previous;
        previous = p;
        FREE(cuMemFree(p));
    }

    CUstream stream;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 10; ++i) {
        CUdeviceptr p;
        CHECK(cuMemAllocAsync(&p, 4 << 20, stream));
        FREE(cuMemFreeAsync(p, stream));
    }
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuStreamDestroy(stream));

    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    size_t granule = 0;
    CHECK(cuMemGetAllocationGranularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    for (int i = 0; i < 5; ++i) {
        CUdeviceptr va;
        CUmemGenericAllocationHandle handle;
        CHECK(cuMemAddressReserve(&va, granule, 0, 0, 0));
        CHECK(cuMemCreate(&handle, granule, &prop, 0));
        CHECK(cuMemMap(va, granule, 0, handle, 0));
        CUmemAccessDesc access{};
        access.location = prop.location;
        access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        CHECK(cuMemSetAccess(va, granule, &access, 1));
        FREE(cuMemUnmap(va, granule));
        FREE(cuMemRelease(handle));
        FREE(cuMemAddressFree(va, granule));
    }

    for (int i = 0; i < 3; ++i) {
        void *host;
        CHECK(cuMemAllocHost(&host, 1 << 16));
        FREE(cuMemFreeHost(host));
    }

    mark();
    report_used_delta(used_at_start, [] { return device_bytes_in_use(); });
    CHECK(cuDevicePrimaryCtxRelease(device));
    printf("same address back after free: %llu of 99\n", reused);
    printf("frees_made=%d\n", frees_made);
    return 0;
}
