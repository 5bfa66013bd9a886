// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A primary context released once more than it was retained, then
// retained again: the driver refuses the extra release and frees nothing,
// and the next last release destroys the context with the memory made in
// it (tests/shim/test_refused_frees.cpp: under the shim that teardown must
// still unpin that memory, not leave its pin to the exit). On the fake
// driver and on a GPU.
//
// Prints each release's result (`release N rc=R`, the same plain and
// hooked) and frees_made=0: the memory goes with its context. Exit status
// 0 when the retains and allocations succeeded.
#include "cuda_checks.h"

#include <cstdio>

namespace {

constexpr size_t size = 4 << 20;

// Retains device 0's primary context, makes it current and allocates in it.
int retain_and_allocate(CUdevice dev, CUdeviceptr &memory)
{
    CUcontext ctx = nullptr;
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuMemAlloc(&memory, size));
    return 0;
}

} // namespace

int main()
{
    CUdevice dev = 0;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGet(&dev, 0));
    CUdeviceptr first = 0, second = 0;
    if (retain_and_allocate(dev, first))
        return 1;
    // The last reference: destroys the context, `first` with it. Then one
    // more than was retained, which the driver refuses (unless a test made
    // the first fail: then this one destroys it).
    for (int release = 1; release <= 2; ++release)
        std::printf("release %d rc=%d\n", release,
                    static_cast<int>(cuDevicePrimaryCtxRelease(dev)));
    if (retain_and_allocate(dev, second))
        return 1;
    // Destroyed again, `second` with it.
    std::printf("release 3 rc=%d\n", static_cast<int>(cuDevicePrimaryCtxRelease(dev)));
    std::printf("frees_made=0\n");
    return 0;
}
