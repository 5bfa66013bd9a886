// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the hot path keeps per thread, in one struct.
//
// A thread_local of a shared library (initial-exec) is found through its
// GOT entry: one more page per call, on the GOT, which the driver's time
// in the kernel has evicted from the TLB by the next call (hot_path.h).
// The offset of a static TLS block from the thread pointer is the same in
// every thread, so it is read once and kept with the other hot globals
// (hot_line.h).
#pragma once

#include "cache/events/event.h"
#include "cache/prim/hot_line.h"
#include "cache/prim/hot_path.h"

#include <atomic>
#include <cstdint>

namespace gdrhook {

// One cache line: the hot path reads and writes it on every call.
struct alignas(64) HotThreadState {
    Via via = Via::symbol;       // how the call in progress reached the hook
    uint32_t tid_generation = 0; // current_tid(): fork generation of `tid`
    int32_t tid = 0;
    int32_t device = -1;            // device_of(): the device of `context`...
    uint32_t device_generation = 0; // ...while no context was torn down
    uint64_t context = 0;
    uint64_t events_recorded = 0;
};

extern GDRHOOK_THREAD_LOCAL HotThreadState hot_thread_state_slot;

intptr_t find_hot_thread_state_offset();

inline HotThreadState &hot_thread_state()
{
#if defined(__x86_64__) || defined(__aarch64__)
    // 0 until known: a static TLS block never starts at the thread pointer.
    intptr_t offset = hot_line.thread_state_offset.load(std::memory_order_relaxed);
    if (GDRHOOK_UNLIKELY(offset == 0))
        offset = find_hot_thread_state_offset();
    return *reinterpret_cast<HotThreadState *>(static_cast<char *>(__builtin_thread_pointer()) +
                                               offset);
#else
    return hot_thread_state_slot; // portable: the TLS access, one more load
#endif
}

int32_t ask_tid(HotThreadState &cached, uint32_t generation);

// In a forked child, before anything else runs there: its threads have new
// ids.
void forget_cached_thread_ids();

// The calling thread's id, asked of the kernel once per thread and fork.
inline int32_t current_tid()
{
    // Bumped in a forked child, whose threads have new ids
    // (forget_cached_thread_ids()).
    const uint32_t generation = hot_line.fork_generation.load(std::memory_order_relaxed);
    HotThreadState &cached = hot_thread_state();
    if (GDRHOOK_LIKELY(cached.tid_generation == generation))
        return cached.tid;
    return ask_tid(cached, generation);
}

} // namespace gdrhook
