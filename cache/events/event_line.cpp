// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/event_line.h"

#include <fmt/format.h>

namespace gdrhook {

size_t format_event_line_at(const Event &event, uint64_t realtime_ns, int pid, char *out)
{
    // Every string we write is a static identifier (API names, kinds) with
    // no characters that need escaping in JSON.
    auto result = fmt::format_to_n(
        out, max_line_size - 1,
        R"({{"ts_ns":{},"seq":{},"pid":{},"tid":{},"ev":"{}","api":"{}","addr":"{:#x}","size":{},"dev":{},"rc":{},"via":"{}")",
        realtime_ns, event.seq, pid, event.tid, to_string(event.kind), event.api,
        event.addr, event.size, event.dev, event.rc, to_string(event.via));
    char *end = result.out;
    const char *limit = out + max_line_size - 2; // room for "}\n"
    auto append = [&](auto &&...args) {
        if (end < limit)
            end = fmt::format_to_n(end, static_cast<size_t>(limit - end), args...).out;
    };
    if (event.mem != MemoryKind::none)
        append(R"(,"kind":"{}")", to_string(event.mem));
    if (event.kind == EventKind::pin || event.kind == EventKind::unpin ||
        event.kind == EventKind::revoke)
        append(R"(,"handle":{})", event.handle);
    if (event.kind == EventKind::unpin)
        append(R"(,"lat_ns":{})", event.lat_ns);
    if (event.backend)
        append(R"(,"backend":"{}")", event.backend);
    if (event.reason)
        append(R"(,"reason":"{}")", event.reason);
    if (event.msg)
        append(R"(,"msg":"{}")", event.msg);
    if (event.kind == EventKind::sample && event.sample)
        append(R"(,"rss_bytes":{},"fds":{},"pinned_bytes":{},"pins":{})",
               event.sample->rss_bytes, event.sample->fds, event.sample->pinned_bytes,
               event.sample->pins);
    if (end > limit)
        end = const_cast<char *>(limit);
    *end++ = '}';
    *end++ = '\n';
    return static_cast<size_t>(end - out);
}

} // namespace gdrhook
