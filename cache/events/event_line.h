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

namespace gdrhook {

inline constexpr size_t max_line_size = 512;

// Formats `event`, which happened at `realtime_ns` (CLOCK_REALTIME), as one
// JSON line with its newline into `out`, which holds at least max_line_size
// bytes. Returns the length.
size_t format_event_line_at(const Event &event, uint64_t realtime_ns, int pid, char *out);

} // namespace gdrhook
