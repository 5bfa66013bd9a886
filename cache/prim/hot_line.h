// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The globals every allocation and free reads, together on one cache line.
// After the driver has evicted the shim (hot_path.h), one miss brings them
// all back; spread over .data they cost five. Each field is written only
// by the file named beside it; everyone else reads.
#pragma once

#include "cache/prim/hot_path.h"

#include <atomic>
#include <cstdint>

namespace gdrhook {

struct Runtime;
class EventPipeline;
class RegistrationCache;
struct DriverQueries;

struct alignas(64) HotLine {
    std::atomic<int> runtime_state{0};            // runtime.cpp (RuntimeState)
    std::atomic<uint32_t> fork_generation{1};     // clock.cpp, for current_tid()
    std::atomic<uint32_t> context_generation{1};  // recorder.cpp, for device_of()
    bool event_clock_counts_tsc = false;          // event_clock.cpp
    bool pin_on_alloc = false;                    // process_cache.cpp: GDRHOOK_PIN=alloc
    Runtime *runtime = nullptr;                   // runtime.cpp
    EventPipeline *pipeline = nullptr;            // runtime.cpp: runtime->pipeline
    std::atomic<intptr_t> thread_state_offset{0}; // thread_state.cpp
    std::atomic<RegistrationCache *> shim_cache{nullptr}; // process_cache.cpp
    // The driver's cuCtxGetCurrent once looked up (hook/driver_queries.cpp),
    // called through this plain-int signature (the ABI of cuda.h's, as in
    // driver_api.h).
    std::atomic<int (*)(void **)> context_query{nullptr};
    const DriverQueries *test_queries = nullptr;  // recorder.cpp: set_driver_queries()
};
static_assert(sizeof(HotLine) == 64, "one cache line");

extern GDRHOOK_HOT_DATA HotLine hot_line;

} // namespace gdrhook
