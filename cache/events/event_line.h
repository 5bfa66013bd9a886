// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// An event as one line of the log (docs/log-format.md): the shim's worker
// writes it (event_log.h), and `gdrhook log recover` writes the events a
// dead process left in its journal (tools/cli/log_recovery.cpp) with the
// same code, so a recovered line is the line the worker would have written.
#pragma once

#include "cache/events/event.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace gdrhook {

inline constexpr size_t max_line_size = 512;

// Formats `event`, which happened at `realtime_ns` (CLOCK_REALTIME), as one
// JSON line with its newline into `out`, which holds at least max_line_size
// bytes. Returns the length.
size_t format_event_line_at(const Event &event, uint64_t realtime_ns, int pid, char *out);

// The keys every line starts with, for a line written whole rather than
// from an Event (the `process` line, the `died` line): `ev` the name of @p kind, `api`
// @p api (a static name, not escaped), no address, size or device, rc 0,
// via `symbol`. The caller adds its own keys and the closing "}\n".
std::string format_whole_line_start(EventKind kind, const char *api, uint64_t ts_ns, uint64_t seq,
                                    int pid, int tid);

// The `died` line that ends a log whose process could not write all of it
// (docs/log-format.md): written by `gdrhook log recover` (api
// "gdrhook_recover", `recovered` lines from the journal) and by the shim
// itself where no journal keeps what the log lacks (api "gdrhook", none
// recovered). `lost`, when not 0: events neither written nor kept.
std::string format_died_line(const char *api, int pid, uint64_t ts_ns, uint64_t seq,
                             uint64_t recovered, uint64_t at_ns, uint64_t lost);

// The `capped` line that ends a log the process's byte cap cut short
// (GDRHOOK_LOG_MAX_BYTES, docs/log-format.md): the cap, and how many events
// were not written past it.
std::string format_capped_line(int pid, uint64_t ts_ns, uint64_t seq, uint64_t max_bytes,
                               uint64_t not_written);

} // namespace gdrhook
