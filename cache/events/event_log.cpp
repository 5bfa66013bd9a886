// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/event_log.h"

#include "cache/events/append_file_sink.h"
#include "cache/base/diagnostics.h"
#include "cache/events/event_clock.h"

#include <spdlog/logger.h>

#include <cstring>
#include <unistd.h>
#include <fmt/format.h>

namespace gdrhook {

size_t format_event_line(const Event &event, int pid, char *out)
{
    // Every string we write is a static identifier (API names, kinds) with
    // no characters that need escaping in JSON.
    auto result = fmt::format_to_n(
        out, max_line_size - 1,
        R"({{"ts_ns":{},"seq":{},"pid":{},"tid":{},"ev":"{}","api":"{}","addr":"{:#x}","size":{},"dev":{},"rc":{},"via":"{}")",
        event_realtime_ns(event), event.seq, pid, event.tid, to_string(event.kind), event.api,
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

std::string EventLog::open(const std::string &path)
{
    path_ = path;
    logger_.reset();
    failed_ = false;
    if (path.empty())
        return {};
    size_t slash = path.rfind('/');
    std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    if (access(folder.c_str(), W_OK | X_OK) != 0) {
        failed_ = true;
        return "cannot open event log '" + path + "': " + strerror(errno);
    }
    return {};
}

bool EventLog::create_file(int pid)
{
    auto sink = std::make_shared<AppendFileSink>(path_);
    if (sink->fd() < 0) {
        failed_ = true;
        diagnostics().error("cannot open event log '{}': {}; events are not logged", path_,
                            strerror(sink->open_errno()));
        return false;
    }
    logger_ = std::make_shared<spdlog::logger>("gdrhook-events", std::move(sink));
    logger_->set_level(spdlog::level::info);
    logger_->flush_on(spdlog::level::off); // the worker flushes per batch
    if (first_line_) {
        const std::string line = first_line_(pid);
        logger_->info(fmt::string_view(line.data(), line.size()));
    }
    return true;
}

void EventLog::write(const Event &event, int pid)
{
    if (!logger_ && (!is_open() || !create_file(pid)))
        return;
    char line[max_line_size];
    size_t length = format_event_line(event, pid, line);
    logger_->info(fmt::string_view(line, length));
}

void EventLog::flush()
{
    if (logger_)
        logger_->flush();
}

} // namespace gdrhook
