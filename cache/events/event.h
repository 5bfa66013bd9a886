// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// One allocation-side event, as the hook records it on the application's
// thread and the worker later turns into a log line. Plain data on purpose:
// it is copied into the lock-free queue by value and must never allocate.
// Its kinds and their names are the log's (log_schema.h).
#pragma once

#include "cache/events/log_schema.h"

#include <cstdint>

namespace gdrhook {

// What a `sample` event reports besides the common keys. Not in Event
// itself: these four numbers mean nothing for the other kinds, and reusing
// fields meant for something else (size for the RSS...) would make every
// reader of Event know a second meaning. A sample is made and written by
// the worker in one go, never queued, so the event can point at the
// worker's copy for the time of that write.
struct ProcessSample {
    uint64_t rss_bytes = 0;    // resident set (/proc/self/statm)
    uint64_t fds = 0;          // open file descriptors (/proc/self/fd)
    uint64_t pinned_bytes = 0; // held by the registration cache now
    uint64_t pins = 0;         // registrations behind pinned_bytes
};

// What a `queries` line reports: the process's pointer queries
// (cache/pointers/pointer_answers.h), written once as it ends. Pointed at
// like a sample's values, for the same reason.
struct QueryCounts {
    uint64_t answered = 0;  // from the shim's table
    uint64_t forwarded = 0; // to the driver
};

struct Event {
    uint64_t ts_ns = 0; // CLOCK_REALTIME, taken before the real call ran...
    uint64_t tsc = 0;   // ...or, when set, the TSC then (event_clock.h)
    uint64_t seq = 0;   // per-process order in which events were recorded
    uint64_t addr = 0;
    uint64_t size = 0;
    uint64_t lat_ns = 0;           // unpin: delay from the free to the unpin
    uint64_t entry_id = 0;         // pin/unpin/revoke: the cache entry's id (Registration::id)
    const char *api = "";          // static string: the CUDA entry point's name
    const char *msg = nullptr;     // static string: what went wrong (error, failed unpin)
    const char *backend = nullptr; // static string: pin/unpin/revoke, the backend
    const char *reason = nullptr;  // static string: unpin, why (invalidated, evicted...)
    const ProcessSample *sample = nullptr; // sample: the values, see ProcessSample
    const QueryCounts *queries = nullptr;  // queries: the counts, see QueryCounts
    int32_t tid = 0;
    int32_t dev = -1;
    int32_t rc = 0; // the CUDA (or runtime) result of the real call
    EventKind kind = EventKind::error;
    Via via = Via::symbol;
    MemoryKind mem = MemoryKind::none;
};

} // namespace gdrhook
