// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/event_line.h"

#include "cache/events/json_text.h"

#include <fmt/format.h>

namespace gdrhook {

size_t format_event_line_at(const Event &event, uint64_t realtime_ns, int pid, char *out)
{
    char *end = fmt::format_to_n(out, max_line_size - 1,
                                 R"({{"ts_ns":{},"seq":{},"pid":{},"tid":{},"ev":"{}","api":")",
                                 realtime_ns, event.seq, pid, event.tid, to_string(event.kind))
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
    append_text(event.api);
    append(R"(,"addr":"{:#x}","size":{},"dev":{},"rc":{},"via":"{}")", event.addr, event.size,
           event.dev, event.rc, to_string(event.via));
    if (event.mem != MemoryKind::none)
        append(R"(,"kind":"{}")", to_string(event.mem));
    if (event.kind == EventKind::pin || event.kind == EventKind::unpin ||
        event.kind == EventKind::revoke)
        append(R"(,"handle":{})", event.entry_id); // the field's name: docs/log-format.md
    if (event.kind == EventKind::unpin)
        append(R"(,"lat_ns":{})", event.lat_ns);
    if (event.backend) {
        append(R"(,"backend":")");
        append_text(event.backend);
    }
    if (event.reason) {
        append(R"(,"reason":")");
        append_text(event.reason);
    }
    if (event.msg) {
        append(R"(,"msg":")");
        append_text(event.msg);
    }
    if (event.kind == EventKind::sample && event.sample)
        append(R"(,"rss_bytes":{},"fds":{},"pinned_bytes":{},"pins":{})", event.sample->rss_bytes,
               event.sample->fds, event.sample->pinned_bytes, event.sample->pins);
    if (end > limit)
        end = const_cast<char *>(limit);
    *end++ = '}';
    *end++ = '\n';
    return static_cast<size_t>(end - out);
}

std::string format_died_line(const char *api, int pid, uint64_t ts_ns, uint64_t seq,
                             uint64_t recovered, uint64_t at_ns, uint64_t lost)
{
    std::string line =
        fmt::format("{{\"ts_ns\":{},\"seq\":{},\"pid\":{},\"tid\":{},\"ev\":\"died\","
                    "\"api\":\"{}\",\"addr\":\"0x0\",\"size\":0,\"dev\":-1,\"rc\":0,"
                    "\"via\":\"symbol\",\"recovered\":{},\"recovered_at_ns\":{}",
                    ts_ns, seq, pid, pid, api, recovered, at_ns);
    if (lost)
        line += ",\"lost\":" + std::to_string(lost);
    return line + "}\n";
}

} // namespace gdrhook
