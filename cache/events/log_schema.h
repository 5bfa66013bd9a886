// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The names of the event log (docs/log-format.md), declared once. The
// shim's writer (event_line.cpp, process_line.cpp) and the tool's readers
// (tools/cli/read/log_reader.cpp, tools/cli/recover/log_tail.cpp) spell
// every event kind, memory kind, `via` value and key from here, so the two
// sides cannot disagree on a name. Header-only, with nothing of the shim
// or the tool in it: both include it without pulling in each other's code.
//
// tests/docs/check_log_schema.py reads this file as text and the document
// beside it: every name here is documented, and every name the document
// lists is here. Keep the form it reads: the names as string literals in
// the braces of the *_names tables and in the two key namespaces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace gdrhook {

// `ev`: what a line records. The shim's queue carries `alloc` … `skip`
// (a journal's cells hold their numbers: append only); `process` and `died`
// are lines written whole (process_line.h, event_line.h).
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
    process,
    died,
    capped,  // the log reached GDRHOOK_LOG_MAX_BYTES: how many events were not written
    queries, // the process's pointer queries, answered from the table and forwarded
    unknown, // a reader's: an `ev` this build does not know; never written
};
inline constexpr const char *const event_kind_names[] = {
    "alloc",  "free", "pin",     "unpin", "revoke", "ctx_destroy", "error",
    "sample", "skip", "process", "died",  "capped", "queries",
};
inline constexpr size_t event_kind_count = std::size(event_kind_names);
static_assert(event_kind_count == static_cast<size_t>(EventKind::unknown),
              "one name for each EventKind, in its order");

// How the application obtained the function that produced the event.
enum class Via : uint8_t {
    symbol,        // called the exported symbol (linked with -lcuda / -lcudart)
    dlsym,         // resolved through dlsym or dlvsym (logs of earlier versions)
    proc_address,  // resolved through cuGetProcAddress(_v2)
    runtime_entry, // resolved through cudaGetDriverEntryPoint(ByVersion)
};
inline constexpr const char *const via_names[] = {
    "symbol",
    "dlsym",
    "cuGetProcAddress",
    "cudaGetDriverEntryPoint",
};
static_assert(std::size(via_names) == static_cast<size_t>(Via::runtime_entry) + 1,
              "one name for each Via, in its order");

// `kind`: what kind of memory an allocation event describes.
enum class MemoryKind : uint8_t {
    none, // no `kind` key on the line
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
inline constexpr const char *const memory_kind_names[] = {
    "", // none: the key is left out
    "device", "pitch", "pool",  "managed", "host", "host_registered", "vmm_physical",
    "vmm",    "ipc",   "graph",
};
static_assert(std::size(memory_kind_names) == static_cast<size_t>(MemoryKind::graph) + 1,
              "one name for each MemoryKind, in its order");

constexpr const char *to_string(EventKind kind)
{
    return kind < EventKind::unknown ? event_kind_names[static_cast<size_t>(kind)] : "";
}
constexpr const char *to_string(Via via)
{
    return via <= Via::runtime_entry ? via_names[static_cast<size_t>(via)] : via_names[0];
}
constexpr const char *to_string(MemoryKind kind)
{
    return kind <= MemoryKind::graph ? memory_kind_names[static_cast<size_t>(kind)] : "";
}

// The kind an `ev` names; unknown for any other text (the schema only
// ever adds names, and readers ignore those they do not know).
constexpr EventKind event_kind_from(std::string_view name)
{
    for (size_t i = 0; i < event_kind_count; ++i)
        if (name == event_kind_names[i])
            return static_cast<EventKind>(i);
    return EventKind::unknown;
}

// The keys of a line: every event's, a `process` line's, a `died` line's.
namespace log_key {
inline constexpr char ts_ns[] = "ts_ns";
inline constexpr char seq[] = "seq";
inline constexpr char pid[] = "pid";
inline constexpr char tid[] = "tid";
inline constexpr char ev[] = "ev";
inline constexpr char api[] = "api";
inline constexpr char addr[] = "addr";
inline constexpr char size[] = "size";
inline constexpr char dev[] = "dev";
inline constexpr char rc[] = "rc";
inline constexpr char via[] = "via";
inline constexpr char kind[] = "kind";
inline constexpr char handle[] = "handle"; // the cache entry's id (Event::entry_id)
inline constexpr char lat_ns[] = "lat_ns";
inline constexpr char backend[] = "backend";
inline constexpr char reason[] = "reason";
inline constexpr char msg[] = "msg";
inline constexpr char rss_bytes[] = "rss_bytes";
inline constexpr char fds[] = "fds";
inline constexpr char pinned_bytes[] = "pinned_bytes";
inline constexpr char pins[] = "pins";
// A `process` line's.
inline constexpr char host[] = "host";
inline constexpr char rank[] = "rank";
inline constexpr char rank_from[] = "rank_from";
inline constexpr char ppid[] = "ppid";
inline constexpr char cmdline[] = "cmdline";
inline constexpr char cmdline_truncated[] = "cmdline_truncated";
inline constexpr char version[] = "version";
inline constexpr char config[] = "config";
inline constexpr char driver_version[] = "driver_version";
inline constexpr char devices[] = "devices";
inline constexpr char clock[] = "clock";
// A `died` line's.
inline constexpr char recovered[] = "recovered";
inline constexpr char recovered_at_ns[] = "recovered_at_ns";
inline constexpr char lost[] = "lost";
// A `capped` line's.
inline constexpr char max_bytes[] = "max_bytes";
inline constexpr char not_written[] = "not_written";
// A `queries` line's.
inline constexpr char answered[] = "answered";
inline constexpr char forwarded[] = "forwarded";
} // namespace log_key

// The keys inside a `process` line's objects: each of `devices`, and
// `clock` (whose counter keys are the counter's name, cycle_counter.h).
namespace log_object_key {
inline constexpr char ordinal[] = "ordinal";
inline constexpr char name[] = "name";
inline constexpr char uuid[] = "uuid";
inline constexpr char pci_bus_id[] = "pci_bus_id";
inline constexpr char source[] = "source";
inline constexpr char realtime_ns[] = "realtime_ns";
inline constexpr char monotonic_ns[] = "monotonic_ns";
} // namespace log_object_key

// How every line starts: its first key, `ts_ns`. A reader tells a line of
// the log from somebody else's text by it.
inline constexpr std::string_view log_line_start = "{\"ts_ns\":";
static_assert(log_line_start.substr(2, std::size(log_key::ts_ns) - 1) == log_key::ts_ns);

} // namespace gdrhook
