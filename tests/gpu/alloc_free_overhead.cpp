// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Time per cuMemAlloc + cuMemFree pair (1 MiB), for the shim's overhead
// benchmark: run it with and without LD_PRELOAD, alternately, and compare.
// Prints "ns_per_pair=X" (the median of several rounds).
//
// usage: alloc_free_overhead [PAIRS [ROUNDS [GAP_NS]]]
// With GAP_NS, the program waits that long between pairs (as a program
// does between real allocations) and times only the calls themselves: run
// against the fake driver, whose calls cost ~0.1 us, this isolates what the
// shim adds at a realistic rate of allocations.
#include "driver_program.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv)
{
    int pairs = argc > 1 ? atoi(argv[1]) : 2000;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    long gap_ns = argc > 3 ? atol(argv[3]) : 0;
    use_primary_context();
    std::vector<double> per_pair;
    for (int r = 0; r < rounds + 1; ++r) {
        std::chrono::steady_clock::duration elapsed{};
        for (int i = 0; i < pairs; ++i) {
            auto start = std::chrono::steady_clock::now();
            CUdeviceptr p;
            if (cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS)
                return 1;
            auto end = std::chrono::steady_clock::now();
            elapsed += end - start;
            if (gap_ns) // busy-wait: a sleep would let the CPU clock down
                while (std::chrono::steady_clock::now() - end < std::chrono::nanoseconds(gap_ns)) {
                }
        }
        if (r > 0) // the first round warms the driver up
            per_pair.push_back(std::chrono::duration<double, std::nano>(elapsed).count() / pairs);
    }
    std::sort(per_pair.begin(), per_pair.end());
    printf("ns_per_pair=%.1f\n", per_pair[per_pair.size() / 2]);
    return 0;
}
