// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A driver-API program whose first call the shim intercepts is an
// allocation: cuInit and cuCtxCreate (a context of its own, not the
// primary one) pass through the shim untouched, then cuMemAlloc_v2 and
// cuMemAllocPitch_v2, each freed with cuMemFree_v2. Prints the addresses
// it got as the log writes them, for tests/shim/test_free_paths.cpp.
#include "cuda_checks.h"

#include <cuda.h>

#include <cstdio>
#include <cstdlib>

namespace {} // namespace

int main()
{
    CHECK_CU_OR_EXIT(cuInit(0), 3);
    CUdevice device;
    CHECK_CU_OR_EXIT(cuDeviceGet(&device, 0), 3);
    CUcontext context;
    CHECK_CU_OR_EXIT(cuCtxCreate(&context, nullptr, 0, device), 3);
    CUdeviceptr plain = 0, pitched = 0;
    size_t pitch = 0;
    CHECK_CU_OR_EXIT(cuMemAlloc(&plain, 4 << 20), 3);
    CHECK_CU_OR_EXIT(cuMemAllocPitch(&pitched, &pitch, 1 << 20, 4, 16), 3);
    printf("plain=0x%llx\npitched=0x%llx\n", static_cast<unsigned long long>(plain),
           static_cast<unsigned long long>(pitched));
    CHECK_CU_OR_EXIT(cuMemFree(plain), 3);
    CHECK_CU_OR_EXIT(cuMemFree(pitched), 3);
    CHECK_CU_OR_EXIT(cuCtxDestroy(context), 3);
    return 0;
}
