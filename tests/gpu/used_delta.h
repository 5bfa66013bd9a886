// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The GPU programs' "mem_used_delta=N" line for tests/gpu/run.sh: device
// memory in use at the end minus at the start.
#pragma once

#include <chrono>
#include <cstdio>
#include <thread>

/// Prints mem_used_delta=N on stderr, N from `used_bytes()` (a device-wide
/// figure: cuMemGetInfo or cudaMemGetInfo). A pin's dma-buf keeps memory
/// until the shim's worker closes it, right after the free: while more is
/// in use than at the start, it asks again for up to a second.
template <class UsedBytes> void report_used_delta(long long used_at_start, UsedBytes used_bytes)
{
    long long used = used_bytes();
    for (int i = 0; i < 100 && used > used_at_start; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        used = used_bytes();
    }
    fprintf(stderr, "mem_used_delta=%lld\n", used - used_at_start);
}
