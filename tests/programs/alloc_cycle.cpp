// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// An unmodified driver-API program for the pin-on-alloc pipeline test
// (the module's VM test with the shim): from two threads, allocates buffers of 1 to 4 MiB with
// cuMemAlloc and frees them, in rounds, some at once and some after the
// next allocations (so freed addresses come back, and frees race the
// worker's unpins). Then it prints "alloc_cycle: freed N" and waits for its
// standard input to close, so a checker can look at what is still pinned
// while the process (and its open /dev/gdrhook) is alive. Nothing of
// gdrhook in it.
#include "cuda_checks.h"

#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

constexpr int rounds = 40;
constexpr int per_round = 6;

int cycle(CUcontext context, unsigned seed)
{
    CHECK_CU_OR_EXIT(cuCtxSetCurrent(context), 1);
    int frees = 0;
    std::vector<CUdeviceptr> held;
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < per_round; k++) {
            seed = seed * 1103515245u + 12345u;
            const size_t size = size_t(1 + (seed >> 16) % 4) << 20;
            CUdeviceptr p;
            CHECK_CU_OR_EXIT(cuMemAlloc(&p, size), 1);
            if ((seed >> 8) % 3 == 0) {
                CHECK_CU_OR_EXIT(cuMemFree(p), 1); // freed at once
                frees++;
            } else {
                held.push_back(p);
            }
        }
        // Free the older half of what is held, oldest first.
        while (held.size() > per_round / 2) {
            CHECK_CU_OR_EXIT(cuMemFree(held.front()), 1);
            held.erase(held.begin());
            frees++;
        }
    }
    for (CUdeviceptr p : held) {
        CHECK_CU_OR_EXIT(cuMemFree(p), 1);
        frees++;
    }
    return frees;
}

} // namespace

int main()
{
    CHECK_CU_OR_EXIT(cuInit(0), 1);
    CUdevice device;
    CHECK_CU_OR_EXIT(cuDeviceGet(&device, 0), 1);
    CUcontext context;
    CHECK_CU_OR_EXIT(cuDevicePrimaryCtxRetain(&context, device), 1);
    CHECK_CU_OR_EXIT(cuCtxSetCurrent(context), 1);

    int frees[2] = {0, 0};
    std::thread other([&] { frees[1] = cycle(context, 7); });
    frees[0] = cycle(context, 1);
    other.join();
    // A few small ones: below GDRHOOK_PIN_MIN_SIZE, never pinned.
    for (int i = 0; i < 4; i++) {
        CUdeviceptr p;
        CHECK_CU_OR_EXIT(cuMemAlloc(&p, 4096), 1);
        CHECK_CU_OR_EXIT(cuMemFree(p), 1);
    }
    printf("alloc_cycle: freed %d\n", frees[0] + frees[1] + 4);
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0) {
    }
    CHECK_CU_OR_EXIT(cuDevicePrimaryCtxRelease(device), 1);
    return 0;
}
