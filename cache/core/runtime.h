// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The process-wide state of the shim, built on first use and never
// destroyed: nothing runs at load time (no allocation, thread or CUDA call),
// and destructors of other libraries that free CUDA memory after ours have
// run still find a working shim.
#pragma once

#include "cache/prim/hot_path.h"
#include "cache/record/alloc_tracker.h"
#include "cache/base/config.h"
#include "cache/events/event_log.h"
#include "cache/prim/hot_line.h"
#include "cache/events/event_pipeline.h"

#include <atomic>

namespace gdrhook {

struct Runtime {
    Config config;
    EventLog log;
    AllocTracker tracker;
    EventPipeline *pipeline = nullptr;
    int pid = 0;
};

enum RuntimeState : int {
    runtime_uninitialized,
    runtime_initializing,
    runtime_enabled,
    runtime_disabled,
};

// The first call initializes; later ones answer from runtime_state.
bool hook_enabled_after_first_call();

// True when the shim should record (initializes on first call). False with
// GDRHOOK_DISABLE=1: every wrapper then only forwards.
inline bool hook_enabled()
{
    if (__builtin_expect(hot_line.runtime_state.load(std::memory_order_acquire) ==
                             runtime_enabled,
                         1))
        return true;
    return hook_enabled_after_first_call();
}

// Initialized state; call only after hook_enabled() returned true.
inline Runtime &runtime()
{
    return *hot_line.runtime;
}

// Flushes the event log and stops the worker (the exit handler does this;
// tests call it to read a complete log).
void shutdown_runtime();

} // namespace gdrhook
