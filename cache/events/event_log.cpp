// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/event_log.h"

#include "cache/base/clock.h"
#include "cache/base/diagnostics.h"
#include "cache/base/safe_file.h"
#include "cache/events/append_file_sink.h"
#include "cache/events/event_clock.h"
#include "cache/events/event_line.h"

#include <spdlog/logger.h>

#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

namespace gdrhook {

size_t format_event_line(const Event &event, int pid, char *out)
{
    return format_event_line_at(event, event_realtime_ns(event), pid, out);
}

Result<void> EventLog::open(const std::string &path)
{
    path_ = path;
    logger_.reset();
    sink_.reset();
    failed_ = false;
    count_anew();
    if (path.empty())
        return {};
    size_t slash = path.rfind('/');
    std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    if (access(folder.c_str(), W_OK | X_OK) != 0) {
        const int error = errno;
        failed_ = true;
        return Result<void>::failure(system_failure(error, "cannot open event log"),
                                     "cannot open event log '" + path + "': " + strerror(error));
    }
    return {};
}

void EventLog::after_fork_in_child()
{
    if (sink_)
        sink_->descriptor_left_with_parent();
}

bool EventLog::create_file(int pid)
{
    auto sink = std::make_shared<AppendFileSink>(path_);
    if (sink->fd() < 0) {
        failed_ = true;
        diagnostics().error("cannot open event log '{}': it {}; events are not logged", path_,
                            sink->why_not());
        return false;
    }
    sink_ = sink;
    logger_ = std::make_shared<spdlog::logger>("gdrhook-events", std::move(sink));
    logger_->set_level(spdlog::level::info);
    logger_->flush_on(spdlog::level::off); // the worker flushes per batch
    if (first_line_) {
        const std::string line = first_line_(pid);
        written_bytes_ += line.size();
        logger_->info(fmt::string_view(line.data(), line.size()));
    }
    return true;
}

bool EventLog::within_cap(size_t length)
{
    // Once over, always over: the log is whole up to the cap, and the
    // events after it are one count, not a log with holes.
    if (not_written_ || (max_bytes_ && written_bytes_ + length > max_bytes_)) {
        ++not_written_;
        return false;
    }
    written_bytes_ += length;
    return true;
}

void EventLog::write(const Event &event, int pid)
{
    if (!logger_ && (!is_open() || !create_file(pid)))
        return;
    char line[max_line_size];
    size_t length = format_event_line(event, pid, line);
    if (!within_cap(length))
        return;
    logger_->info(fmt::string_view(line, length));
}

bool EventLog::flush()
{
    if (!logger_)
        return true;
    logger_->flush();
    return sink_->all_written();
}

int EventLog::write_errno() const
{
    return sink_ ? sink_->write_errno() : 0;
}

bool EventLog::all_written() const
{
    return !sink_ || sink_->all_written();
}

uint64_t EventLog::dropped_lines() const
{
    return sink_ ? sink_->dropped_lines() : 0;
}

void EventLog::keep_room_for_loss_line()
{
    // Enough for the rest of a cut line and the loss line, in whole blocks.
    constexpr off_t room_bytes = 16 * 1024;
    const size_t slash = path_.rfind('/');
    if (path_.empty() || slash == std::string::npos)
        return;
    const std::string folder = slash == 0 ? "/" : path_.substr(0, slash);
    room_ = OwnedFd::adopt(std::move(create_unnamed(folder.c_str(), 0600)->fd), true);
    if (room_.valid() && posix_fallocate(room_.get(), 0, room_bytes) != 0)
        room_.reset();
}

void EventLog::end_with_capped_line(int pid, uint64_t seq)
{
    // Once, unless more were kept out since (an exec that failed, and the
    // process ended later).
    if (not_written_ == capped_line_said_ || !logger_)
        return;
    const std::string line = format_capped_line(pid, realtime_ns(), seq, max_bytes_, not_written_);
    capped_line_said_ = not_written_;
    logger_->info(fmt::string_view(line.data(), line.size()));
    logger_->flush();
}

uint64_t EventLog::end_with_loss_line(uint64_t lost, int pid, uint64_t seq)
{
    room_.reset(); // its blocks are the room the line is written in
    if (!is_open() || (!sink_ && !create_file(pid)))
        return lost;
    return sink_->end_with_loss_line(lost, [&](uint64_t all_lost) {
        const uint64_t now = realtime_ns();
        return format_died_line("gdrhook", pid, now, seq, 0, now, all_lost);
    });
}

} // namespace gdrhook
