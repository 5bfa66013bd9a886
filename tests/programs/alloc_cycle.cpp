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
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unistd.h>
#include <vector>

#define CHECK(call)                                                           \
    do {                                                                      \
        CUresult rc_ = (call);                                                \
        if (rc_ != CUDA_SUCCESS) {                                            \
            fprintf(stderr, "alloc_cycle: %s failed with %d\n", #call, rc_);  \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

namespace {

constexpr int rounds = 40;
constexpr int per_round = 6;

int cycle(CUcontext context, unsigned seed)
{
    CHECK(cuCtxSetCurrent(context));
    int frees = 0;
    std::vector<CUdeviceptr> held;
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < per_round; k++) {
            seed = seed * 1103515245u + 12345u;
            const size_t size = size_t(1 + (seed >> 16) % 4) << 20;
            CUdeviceptr p;
            CHECK(cuMemAlloc(&p, size));
            if ((seed >> 8) % 3 == 0) {
                CHECK(cuMemFree(p)); // freed at once
                frees++;
            } else {
                held.push_back(p);
            }
        }
        // Free the older half of what is held, oldest first.
        while (held.size() > per_round / 2) {
            CHECK(cuMemFree(held.front()));
            held.erase(held.begin());
            frees++;
        }
    }
    for (CUdeviceptr p : held) {
        CHECK(cuMemFree(p));
        frees++;
    }
    return frees;
}

} // namespace

int main()
{
    CHECK(cuInit(0));
    CUdevice device;
    CHECK(cuDeviceGet(&device, 0));
    CUcontext context;
    CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cuCtxSetCurrent(context));

    int frees[2] = {0, 0};
    std::thread other([&] { frees[1] = cycle(context, 7); });
    frees[0] = cycle(context, 1);
    other.join();
    // A few small ones: below GDRHOOK_PIN_MIN_SIZE, never pinned.
    for (int i = 0; i < 4; i++) {
        CUdeviceptr p;
        CHECK(cuMemAlloc(&p, 4096));
        CHECK(cuMemFree(p));
    }
    printf("alloc_cycle: freed %d\n", frees[0] + frees[1] + 4);
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0) {
    }
    CHECK(cuDevicePrimaryCtxRelease(device));
    return 0;
}
