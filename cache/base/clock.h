// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The two clocks of the shim, read through the vDSO: no system call.
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

} // namespace gdrhook
