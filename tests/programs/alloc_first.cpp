// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A driver-API program whose first call the shim intercepts is an
// allocation: cuInit and cuCtxCreate (a context of its own, not the
// primary one) pass through the shim untouched, then cuMemAlloc_v2 and
// cuMemAllocPitch_v2, each freed with cuMemFree_v2. Prints the addresses
// it got as the log writes them, for tests/shim/test_free_paths.cpp.
#include <cuda.h>

#include <cstdio>
#include <cstdlib>

namespace {

void check(CUresult rc, const char *what)
{
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "alloc_first: %s failed with %d\n", what, rc);
        exit(3);
    }
}

} // namespace

int main()
{
    check(cuInit(0), "cuInit");
    CUdevice device;
    check(cuDeviceGet(&device, 0), "cuDeviceGet");
    CUcontext context;
    check(cuCtxCreate(&context, nullptr, 0, device), "cuCtxCreate");
    CUdeviceptr plain = 0, pitched = 0;
    size_t pitch = 0;
    check(cuMemAlloc(&plain, 4 << 20), "cuMemAlloc");
    check(cuMemAllocPitch(&pitched, &pitch, 1 << 20, 4, 16), "cuMemAllocPitch");
    printf("plain=0x%llx\npitched=0x%llx\n", static_cast<unsigned long long>(plain),
           static_cast<unsigned long long>(pitched));
    check(cuMemFree(plain), "cuMemFree");
    check(cuMemFree(pitched), "cuMemFree");
    check(cuCtxDestroy(context), "cuCtxDestroy");
    return 0;
}
