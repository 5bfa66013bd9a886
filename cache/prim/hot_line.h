// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The globals every allocation and free reads, together on one cache line.
// After the driver has evicted the shim (hot_path.h), one miss brings them
// all back; spread over .data they cost five.
//
// The line is a snapshot, not a registry: the runtime (core/runtime.cpp),
// the one place that builds the shim's objects, fills the references once
// (the cache when it is first needed) and nobody else writes them. The
// rest are flags and counters that must be read on the same line; each is
// written by the one file named beside it.
#pragma once

#include "cache/prim/hot_path.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gdrhook {

class AllocTracker;
class EventPipeline;
class RegistrationCache;
struct DriverQueries;

enum RuntimeState : uint8_t {
    runtime_uninitialized,
    runtime_initializing,
    runtime_enabled,
    runtime_disabled,
};

struct alignas(64) HotLine {
    // Filled by the runtime, before runtime_state says enabled...
    std::atomic<uint8_t> runtime_state{runtime_uninitialized};
    // (counters and flags, below, fill the rest of the first 16 bytes)
    std::atomic<uint8_t> alloc_listeners{0};     // notify/alloc_subscribers.cpp: a bit each
    std::atomic<uint8_t> free_listeners{0};      // notify/free_subscribers.cpp: a bit each
    std::atomic<uint32_t> fork_generation{1};    // events/thread_state.cpp
    std::atomic<uint32_t> context_generation{1}; // record/recorder.cpp
    bool event_clock_counts_tsc = false;         // events/event_clock.cpp
    bool profiling = false;                      // prim/profile.h, GDRHOOK_PROFILE
    std::atomic<uint16_t> captures{0};           // base/capture.h: in progress
    EventPipeline *pipeline = nullptr;           // runtime
    AllocTracker *tracker = nullptr;             // runtime
    const DriverQueries *queries = nullptr;      // runtime: the hook's (base/driver_api.h)
    // ...or later, once, by the runtime: the process's registration cache
    // when first needed, and the driver's cuCtxGetCurrent when the hook
    // found it (called through this plain-int signature, the ABI of
    // cuda.h's).
    std::atomic<RegistrationCache *> cache{nullptr};
    std::atomic<int (*)(void **)> context_query{nullptr};
    std::atomic<intptr_t> thread_state_offset{0}; // events/thread_state.cpp
};
static_assert(sizeof(HotLine) == 64, "one cache line");
static_assert(offsetof(HotLine, profiling) < 16, "in the padding before the pointers");
static_assert(offsetof(HotLine, captures) < 16, "in the padding before the pointers");
static_assert(offsetof(HotLine, free_listeners) < 16, "in the padding before the pointers");
static_assert(offsetof(HotLine, alloc_listeners) < 16, "in the padding before the pointers");

extern GDRHOOK_HOT_DATA HotLine hot_line;

// Whether the runtime runs (started, and not GDRHOOK_DISABLE=1). The hook
// starts it on the first call (core/runtime.h); the layers below only ask.
inline bool runtime_running()
{
    return GDRHOOK_LIKELY(hot_line.runtime_state.load(std::memory_order_acquire) ==
                          runtime_enabled);
}

} // namespace gdrhook
