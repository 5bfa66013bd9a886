// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/event_line.h"

#include "cache/events/json_text.h"

#include <fmt/format.h>

namespace gdrhook {

size_t format_event_line_at(const Event &event, uint64_t realtime_ns, int pid, char *out)
{
    char *end = fmt::format_to_n(
                    out, max_line_size - 1, R"({{"{}":{},"{}":{},"{}":{},"{}":{},"{}":"{}","{}":")",
                    log_key::ts_ns, realtime_ns, log_key::seq, event.seq, log_key::pid, pid,
                    log_key::tid, event.tid, log_key::ev, to_string(event.kind), log_key::api)
                    .out;
    const char *limit = out + max_line_size - 2; // room for "}\n"
    auto append = [&](auto &&...args) {
        if (end < limit)
            end = fmt::format_to_n(end, static_cast<size_t>(limit - end), args...).out;
    };
    // The strings are the shim's own names, but a journal read back by
    // the tool is anybody's file: they are escaped all the same (json_text.h).
    // A string cut short by the line's limit is still closed.
    auto append_text = [&](const char *text) {
        if (end + 1 < limit)
            end += write_json_text(text, end, static_cast<size_t>(limit - 1 - end));
        if (end < limit)
            *end++ = '"';
    };
    auto append_text_key = [&](const char *key, const char *text) {
        append(R"(,"{}":")", key);
        append_text(text);
    };
    append_text(event.api);
    append(R"(,"{}":"{:#x}","{}":{},"{}":{},"{}":{},"{}":"{}")", log_key::addr, event.addr,
           log_key::size, event.size, log_key::dev, event.dev, log_key::rc, event.rc, log_key::via,
           to_string(event.via));
    if (event.mem != MemoryKind::none)
        append(R"(,"{}":"{}")", log_key::kind, to_string(event.mem));
    if (event.kind == EventKind::pin || event.kind == EventKind::unpin ||
        event.kind == EventKind::revoke)
        append(R"(,"{}":{})", log_key::handle, event.entry_id);
    if (event.kind == EventKind::unpin)
        append(R"(,"{}":{})", log_key::lat_ns, event.lat_ns);
    if (event.backend)
        append_text_key(log_key::backend, event.backend);
    if (event.reason)
        append_text_key(log_key::reason, event.reason);
    if (event.msg)
        append_text_key(log_key::msg, event.msg);
    if (event.kind == EventKind::sample && event.sample)
        append(R"(,"{}":{},"{}":{},"{}":{},"{}":{})", log_key::rss_bytes, event.sample->rss_bytes,
               log_key::fds, event.sample->fds, log_key::pinned_bytes, event.sample->pinned_bytes,
               log_key::pins, event.sample->pins);
    if (event.kind == EventKind::queries && event.queries)
        append(R"(,"{}":{},"{}":{})", log_key::answered, event.queries->answered,
               log_key::forwarded, event.queries->forwarded);
    if (end > limit)
        end = const_cast<char *>(limit);
    *end++ = '}';
    *end++ = '\n';
    return static_cast<size_t>(end - out);
}

std::string format_whole_line_start(EventKind kind, const char *api, uint64_t ts_ns, uint64_t seq,
                                    int pid, int tid)
{
    return fmt::format(R"({{"{}":{},"{}":{},"{}":{},"{}":{},"{}":"{}","{}":"{}",)"
                       R"("{}":"0x0","{}":0,"{}":-1,"{}":0,"{}":"{}")",
                       log_key::ts_ns, ts_ns, log_key::seq, seq, log_key::pid, pid, log_key::tid,
                       tid, log_key::ev, to_string(kind), log_key::api, api, log_key::addr,
                       log_key::size, log_key::dev, log_key::rc, log_key::via,
                       to_string(Via::symbol));
}

std::string format_capped_line(int pid, uint64_t ts_ns, uint64_t seq, uint64_t max_bytes,
                               uint64_t not_written)
{
    return format_whole_line_start(EventKind::capped, "gdrhook", ts_ns, seq, pid, pid) +
           fmt::format(R"(,"{}":{},"{}":{}}})", log_key::max_bytes, max_bytes, log_key::not_written,
                       not_written) +
           "\n";
}

std::string format_died_line(const char *api, int pid, uint64_t ts_ns, uint64_t seq,
                             uint64_t recovered, uint64_t at_ns, uint64_t lost)
{
    std::string line = format_whole_line_start(EventKind::died, api, ts_ns, seq, pid, pid) +
                       fmt::format(R"(,"{}":{},"{}":{})", log_key::recovered, recovered,
                                   log_key::recovered_at_ns, at_ns);
    if (lost)
        line += fmt::format(R"(,"{}":{})", log_key::lost, lost);
    return line + "}\n";
}

} // namespace gdrhook
