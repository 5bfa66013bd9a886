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
#include "cache/events/journal.h"
#include "cache/notify/free_subscribers.h"
#include "cache/prim/hot_line.h"
#include "cache/record/alloc_tracker.h"
#include "cache/record/graph_memory.h"

namespace gdrhook {

class Unpinner;

// What the runtime builds, once; its parts get references to what they use.
struct Runtime {
    Config config;
    EventLog log;
    AllocTracker tracker;
    GraphMemory graph_memory; // what the process's graphs own
    DriverQueries queries;    // the hook's
    EventPipeline *pipeline = nullptr;
    Unpinner *unpinner = nullptr;             // when pinning is on
    FreeSubscription cache_subscription = -1; // the cache's place among a free's listeners
    int pid = 0;
    bool forked_child = false;     // made by fork() of a recording process
    uint64_t written_at_fork = 0;  // lines the pipeline had written then
    uint64_t descriptor_limit = 0; // soft RLIMIT_NOFILE at start, 0: unlimited
    // The queue's cells, beside the log. Last: the members above keep the
    // places (and cache lines) the hot path finds them at.
    Journal journal;
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

// The process ends or is replaced without running exit handlers (_exit,
// _Exit, quick_exit, exec): everything recorded is written to the log
// first, as exit() would, and what is pinned is unpinned and logged (exec
// closes the dma-buf fds; the module releases its pins at close). A forked
// child that recorded nothing of its own execs without a log, as before.
// Nothing in a vfork()ed child, which shares the parent's memory.
enum class ProcessEnd {
    after_handlers, // quick_exit: at_quick_exit handlers run after us
    now,            // _exit, _Exit: nothing of the program's runs after us
    exec,           // replaced, unless the exec fails
};
// With `now` and `exec`, other threads' events from then on wait for the
// process to be gone (EventPipeline::close_for_process_end()).
void finish_before_process_ends(ProcessEnd how);

// The exec failed and the program goes on: threads held back write again.
void process_goes_on_after_failed_exec();

} // namespace gdrhook
