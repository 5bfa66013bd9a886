// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/log_event.h"

namespace gdrhook::cli {

std::string_view kind_label(EventKind kind)
{
    return kind == EventKind::unknown ? "unknown" : to_string(kind);
}

bool counts_as_gpu_memory(std::string_view mem_kind)
{
    return mem_kind != to_string(MemoryKind::host) &&
           mem_kind != to_string(MemoryKind::host_registered) &&
           mem_kind != to_string(MemoryKind::vmm_mapping) && mem_kind != to_string(MemoryKind::ipc);
}

bool starts_as_log_line(std::string_view text)
{
    return text.substr(0, log_line_start.size()) == log_line_start.substr(0, text.size());
}

bool is_verify_finding(const LogEvent &event)
{
    if (event.kind != EventKind::error)
        return false;
    std::string_view msg = event.msg;
    return msg.substr(0, 6) == "verify" || msg.substr(0, 5) == "stale";
}

} // namespace gdrhook::cli
