// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Device memory in use now against a baseline, once the shim has had a
// moment: a pin's dma-buf keeps freed memory allocated until it is closed,
// and a close the worker does (or a graph's memory the driver trims)
// comes back moments after the free. One wait for every program that
// reports or checks it: tests/gpu's "mem_used_delta=N" line,
// coherence_churn's used_delta_bytes, graph_memory's releases and
// ucx_rcache's memory held.
#pragma once

#include <chrono>
#include <cstdio>
#include <thread>

/// used_bytes() - used_at_start, asked again every `period` while more is
/// in use than at the start, `tries` times at most. `used_bytes` is a
/// device-wide figure (cuMemGetInfo or cudaMemGetInfo).
template <class UsedBytes>
long long settled_used_delta(long long used_at_start, UsedBytes used_bytes, int tries = 100,
                             std::chrono::milliseconds period = std::chrono::milliseconds(10))
{
    long long used = used_bytes();
    for (int i = 0; i < tries && used > used_at_start; ++i) {
        std::this_thread::sleep_for(period);
        used = used_bytes();
    }
    return used - used_at_start;
}

/// Prints mem_used_delta=N on stderr (tests/gpu/run.sh's "mem MiB"
/// column), after up to a second of settling.
template <class UsedBytes> void report_used_delta(long long used_at_start, UsedBytes used_bytes)
{
    fprintf(stderr, "mem_used_delta=%lld\n", settled_used_delta(used_at_start, used_bytes));
}
