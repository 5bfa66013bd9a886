// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "cache/events/log_schema.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace gdrhook::cli {

// The "ev" values are the log's (cache/events/log_schema.h); any other is
// EventKind::unknown and is ignored by every command (the schema only ever
// adds values). What a command counts by kind, unknown included.
inline constexpr size_t tallied_kind_count = event_kind_count + 1;
using gdrhook::EventKind;

// The kind's name in the log, "unknown" for EventKind::unknown: how the
// tool's reports name it.
std::string_view kind_label(EventKind kind);

// Where an event came from: the index of its file in the command line and
// its 1-based line number, so every finding can name both.
struct SourceLocation {
    uint32_t file = 0;
    uint64_t line = 0;
};

// What a `process` line (the first line a process writes) says about the
// process that wrote the log; see the README's event log schema. Only the
// keys the tools use are kept.
struct ProcessInfo {
    std::string host; // short host name, "" when absent
    bool has_rank = false;
    int64_t rank = 0;
    int64_t ppid = 0;
    std::string cmdline;        // the arguments joined by spaces
    std::string version;        // gdrhook's
    std::string config;         // "GDRHOOK_X=v GDRHOOK_Y=w", sorted by name
    int64_t driver_version = 0; // 0 when absent
};

// One line of the event log. String views point into a StringTable that
// lives as long as the reader, except msg, which is rare and copied.
struct LogEvent {
    int64_t ts_ns = 0;
    int64_t pid = 0;
    int64_t tid = 0;
    EventKind kind = EventKind::unknown;
    std::string_view ev; // the raw "ev" text (kept for unknown kinds)
    std::string_view api;
    uint64_t addr = 0;
    uint64_t size = 0;
    int64_t dev = -1;
    int64_t rc = 0;

    // Optional keys; has_* says whether the line carried them.
    bool has_seq = false;
    bool has_entry_id = false;
    bool has_lat = false;
    int64_t seq = 0;
    uint64_t entry_id = 0; // the `handle` field: the cache entry's id
    int64_t lat_ns = 0;
    std::string_view backend;  // "" when absent
    std::string_view via;      // "" when absent
    std::string_view mem_kind; // "kind" on alloc/free, "" when absent
    std::string_view reason;   // "reason" on skip, unpin and pin, "" when absent
    std::string msg;           // "msg" on error, "" when absent
    uint64_t lost = 0;         // "lost" on died: events neither logged nor kept
    uint64_t max_bytes = 0;    // "max_bytes" on capped: the process's byte cap
    uint64_t not_written = 0;  // "not_written" on capped: events past the cap
    uint64_t answered = 0;     // "answered" on queries: pointer queries from the table
    uint64_t forwarded = 0;    // "forwarded" on queries: pointer queries to the driver
    ProcessInfo process;       // of a `process` line; empty otherwise

    // A sample's measurements (GDRHOOK_SAMPLE_MS); has_* as above.
    bool has_rss = false;
    bool has_fds = false;
    uint64_t rss_bytes = 0;
    uint64_t fds = 0;
    uint64_t pinned_bytes = 0;
    uint64_t pins = 0;
};

// True for memory kinds that are GPU memory owned by the process: what
// "live GPU bytes" counts. Host memory, VMM mappings (the physical handle
// is counted instead) and imported IPC memory are not.
bool counts_as_gpu_memory(std::string_view mem_kind);

// Whether `text` starts as every line of a gdrhook log does (`{"ts_ns":`),
// or is a beginning of that too short to tell: a line cut short that is
// not this is somebody else's text, never a torn line of ours.
bool starts_as_log_line(std::string_view text);

// True for error events that report a verify-mode finding.
bool is_verify_finding(const LogEvent &event);

} // namespace gdrhook::cli
