// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The README's demo: a small driver-API program that allocates and frees
// GPU memory the ways communication libraries worry about (a freed address
// handed out again, VMM unmap/release), with nothing of gdrhook in it. Run
// it under the shim to see the events it produces.
#include "cuda_checks.h"

#include <cuda.h>

#include <cstdio>
#include <cstdlib>

int main()
{
    CHECK_CU_OR_EXIT(cuInit(0), 1);
    CUdevice device;
    CHECK_CU_OR_EXIT(cuDeviceGet(&device, 0), 1);
    char name[128];
    CHECK_CU_OR_EXIT(cuDeviceGetName(name, sizeof(name), device), 1);
    CUcontext context;
    CHECK_CU_OR_EXIT(cuDevicePrimaryCtxRetain(&context, device), 1);
    CHECK_CU_OR_EXIT(cuCtxSetCurrent(context), 1);
    printf("demo: device 0 is %s\n", name);

    const size_t size = 64 << 20;
    CUdeviceptr buffers[4];
    for (CUdeviceptr &b : buffers)
        CHECK_CU_OR_EXIT(cuMemAlloc(&b, size), 1);
    CHECK_CU_OR_EXIT(cuMemFree(buffers[1]), 1);
    CUdeviceptr again;
    CHECK_CU_OR_EXIT(cuMemAlloc(&again, size), 1);
    printf("demo: freed 0x%llx and allocated the same size again: got %s address\n",
           static_cast<unsigned long long>(buffers[1]),
           again == buffers[1] ? "the same" : "a different");
    buffers[1] = again;
    for (CUdeviceptr b : buffers)
        CHECK_CU_OR_EXIT(cuMemFree(b), 1);

    // Virtual memory management: what PyTorch's expandable segments and
    // NCCL do.
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    size_t granularity = 0;
    CHECK_CU_OR_EXIT(
        cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), 1);
    CUdeviceptr va;
    CUmemGenericAllocationHandle handle;
    CHECK_CU_OR_EXIT(cuMemAddressReserve(&va, granularity, 0, 0, 0), 1);
    CHECK_CU_OR_EXIT(cuMemCreate(&handle, granularity, &prop, 0), 1);
    CHECK_CU_OR_EXIT(cuMemMap(va, granularity, 0, handle, 0), 1);
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU_OR_EXIT(cuMemSetAccess(va, granularity, &access, 1), 1);
    CHECK_CU_OR_EXIT(cuMemUnmap(va, granularity), 1);
    CHECK_CU_OR_EXIT(cuMemRelease(handle), 1);
    CHECK_CU_OR_EXIT(cuMemAddressFree(va, granularity), 1);

    CHECK_CU_OR_EXIT(cuDevicePrimaryCtxRelease(device), 1);
    printf("demo: made 5 allocations, 1 VMM mapping; freed them all\n");
    return 0;
}
