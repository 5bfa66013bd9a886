// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Time and thread identity for events. Cheap, allocation-free, fork-aware.
#pragma once

#include "cache/prim/hot_path.h"
#include <cstdint>
#include <ctime>

// Thread-locals of the shim use the initial-exec model: the shim is loaded
// at start-up (LD_PRELOAD or a link dependency), so its few bytes live in
// static TLS and every access is one instruction, not a __tls_get_addr call.
#define GDRHOOK_THREAD_LOCAL thread_local __attribute__((tls_model("initial-exec")))

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

// The calling thread's kernel id, cached per thread: current_tid(), in
// thread_state.h with the per-thread state it reads. The cache is dropped
// in a forked child, whose only thread has a new id.

// Called in the child after fork(), before anything else runs there.
void forget_cached_thread_ids();

} // namespace gdrhook
