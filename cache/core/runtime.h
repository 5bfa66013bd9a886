// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The process-wide state of the shim, built on first use and never
// destroyed: nothing runs at load time (no allocation, thread or CUDA call),
// and destructors of other libraries that free CUDA memory after ours have
// run still find a working shim.
#pragma once

#include "cache/base/config.h"
#include "cache/base/driver_api.h"
#include "cache/events/event_log.h"
#include "cache/events/event_pipeline.h"
#include "cache/prim/hot_line.h"
#include "cache/record/alloc_tracker.h"

namespace gdrhook {

class Unpinner;

// What the runtime builds, once; its parts get references to what they use.
struct Runtime {
    Config config;
    EventLog log;
    AllocTracker tracker;
    DriverQueries queries;          // the hook's
    EventPipeline *pipeline = nullptr;
    Unpinner *unpinner = nullptr;   // when pinning is on
    int pid = 0;
};

// The first call builds the runtime, with the driver queries of the hook
// that starts it; later calls answer from hot_line.runtime_state. True when
// the shim records (false with GDRHOOK_DISABLE=1: every wrapper then only
// forwards).
bool start_runtime(const DriverQueries &queries);

// The started runtime; call only once runtime_running() said so.
Runtime &runtime();

// The hook found the driver's cuCtxGetCurrent: the recorder calls it
// directly from now on (hot_line.h).
void publish_context_query(int (*query)(void **));

// Flushes the event log and stops the worker (the exit handler does this;
// tests call it to read a complete log).
void shutdown_runtime();

} // namespace gdrhook
