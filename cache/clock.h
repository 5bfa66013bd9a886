// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Time and thread identity for events. Cheap, allocation-free, fork-aware.
#pragma once

#include <cstdint>
#include <ctime>

namespace gdrhook {

inline uint64_t realtime_ns()
{
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); // vDSO: no system call
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

inline uint64_t monotonic_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

// The calling thread's kernel id, cached per thread. The cache is dropped in
// a forked child, whose only thread has a new id.
int32_t current_tid();

// Called in the child after fork(), before anything else runs there.
void forget_cached_thread_ids();

} // namespace gdrhook
