// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// One allocation-side event, as the hook records it on the application's
// thread and the worker later turns into a log line. Plain data on purpose:
// it is copied into the lock-free queue by value and must never allocate.
#pragma once

#include <cstdint>

namespace gdrhook {

enum class EventKind : uint8_t {
    alloc,
    free,
    pin,
    unpin,
    revoke,
    ctx_destroy,
    error,
    sample, // the worker's periodic measurement (GDRHOOK_SAMPLE_MS)
    skip,   // pin-on-alloc left an allocation unpinned, `reason` says why
};

// How the application obtained the function that produced the event.
enum class Via : uint8_t {
    symbol,        // called the exported symbol (linked with -lcuda / -lcudart)
    dlsym,         // resolved through dlsym or dlvsym
    proc_address,  // resolved through cuGetProcAddress(_v2)
    runtime_entry, // resolved through cudaGetDriverEntryPoint(ByVersion)
};

// What kind of memory an allocation event describes.
enum class MemoryKind : uint8_t {
    none,
    device,
    pitch,
    pool,
    managed,
    host,
    host_registered,
    vmm_physical, // cuMemCreate: a physical handle, addr is the handle
    vmm_mapping,  // cuMemMap: a virtual range backed by a handle
    ipc,
    graph, // stream-ordered, allocated on a stream being captured
};

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
    int32_t tid = 0;
    int32_t dev = -1;
    int32_t rc = 0; // the CUDA (or runtime) result of the real call
    EventKind kind = EventKind::error;
    Via via = Via::symbol;
    MemoryKind mem = MemoryKind::none;
};

const char *to_string(EventKind kind);
const char *to_string(Via via);
const char *to_string(MemoryKind kind);

} // namespace gdrhook
