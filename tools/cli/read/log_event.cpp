// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/log_event.h"

namespace gdrhook::cli {

namespace {
constexpr std::string_view kind_names[event_kind_count] = {
    "alloc", "free",   "pin",     "unpin", "revoke", "ctx_destroy",
    "error", "sample", "process", "skip",  "unknown"};
}

std::string_view to_string(EventKind kind)
{
    return kind_names[static_cast<int>(kind)];
}

EventKind event_kind_from(std::string_view name)
{
    // The last entry is the fallback, so it is never matched by name.
    for (int i = 0; i < event_kind_count - 1; ++i)
        if (kind_names[i] == name)
            return static_cast<EventKind>(i);
    return EventKind::unknown;
}

bool counts_as_gpu_memory(std::string_view mem_kind)
{
    return mem_kind != "host" && mem_kind != "host_registered" && mem_kind != "vmm" &&
           mem_kind != "ipc";
}

bool starts_as_log_line(std::string_view text)
{
    constexpr std::string_view line_start = "{\"ts_ns\":";
    return text.substr(0, line_start.size()) == line_start.substr(0, text.size());
}

bool is_verify_finding(const LogEvent &event)
{
    if (event.kind != EventKind::error)
        return false;
    std::string_view msg = event.msg;
    return msg.substr(0, 6) == "verify" || msg.substr(0, 5) == "stale";
}

} // namespace gdrhook::cli
