// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The process-wide state of the shim, built on first use and never
// destroyed: nothing runs at load time (no allocation, thread or CUDA call),
// and destructors of other libraries that free CUDA memory after ours have
// run still find a working shim.
#pragma once

#include "cache/hot_path.h"
#include "cache/alloc_tracker.h"
#include "cache/config.h"
#include "cache/event_log.h"
#include "cache/pipeline.h"

namespace gdrhook {

struct Runtime {
    Config config;
    EventLog log;
    AllocTracker tracker;
    EventPipeline *pipeline = nullptr;
    int pid = 0;
};

// True when the shim should record (initializes on first call). False with
// GDRHOOK_DISABLE=1: every wrapper then only forwards.
GDRHOOK_HOT bool hook_enabled();

// Initialized state; call only after hook_enabled() returned true.
GDRHOOK_HOT Runtime &runtime();

// Flushes the event log and stops the worker (the exit handler does this;
// tests call it to read a complete log).
void shutdown_runtime();

} // namespace gdrhook
