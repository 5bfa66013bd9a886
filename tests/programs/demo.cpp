// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The README's demo: a small driver-API program that allocates and frees
// GPU memory the ways communication libraries worry about (a freed address
// handed out again, VMM unmap/release), with nothing of gdrhook in it. Run
// it under the shim to see the events it produces.
#include <cuda.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                           \
    do {                                                                      \
        CUresult rc_ = (call);                                                \
        if (rc_ != CUDA_SUCCESS) {                                            \
            fprintf(stderr, "demo: %s failed with %d\n", #call, rc_);         \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

int main()
{
    CHECK(cuInit(0));
    CUdevice device;
    CHECK(cuDeviceGet(&device, 0));
    char name[128];
    CHECK(cuDeviceGetName(name, sizeof(name), device));
    CUcontext context;
    CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cuCtxSetCurrent(context));
    printf("demo: device 0 is %s\n", name);

    const size_t size = 64 << 20;
    CUdeviceptr buffers[4];
    for (CUdeviceptr &b : buffers)
        CHECK(cuMemAlloc(&b, size));
    CHECK(cuMemFree(buffers[1]));
    CUdeviceptr again;
    CHECK(cuMemAlloc(&again, size));
    printf("demo: freed 0x%llx and allocated the same size again: got %s address\n",
           static_cast<unsigned long long>(buffers[1]),
           again == buffers[1] ? "the same" : "a different");
    buffers[1] = again;
    for (CUdeviceptr b : buffers)
        CHECK(cuMemFree(b));

    // Virtual memory management: what PyTorch's expandable segments and
    // NCCL do.
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    size_t granularity = 0;
    CHECK(cuMemGetAllocationGranularity(&granularity, &prop,
                                        CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr va;
    CUmemGenericAllocationHandle handle;
    CHECK(cuMemAddressReserve(&va, granularity, 0, 0, 0));
    CHECK(cuMemCreate(&handle, granularity, &prop, 0));
    CHECK(cuMemMap(va, granularity, 0, handle, 0));
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK(cuMemSetAccess(va, granularity, &access, 1));
    CHECK(cuMemUnmap(va, granularity));
    CHECK(cuMemRelease(handle));
    CHECK(cuMemAddressFree(va, granularity));

    CHECK(cuDevicePrimaryCtxRelease(device));
    printf("demo: made 5 allocations, 1 VMM mapping; freed them all\n");
    return 0;
}
