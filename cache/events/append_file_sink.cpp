// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/append_file_sink.h"

#include "cache/base/diagnostics.h"
#include "cache/base/private_files.h"
#include "cache/base/safe_file.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace gdrhook {

namespace {
constexpr size_t flush_threshold = 64 * 1024;
// What waits for a file system with no room: the lines of a full queue
// (whose events the journal holds too) and the worker's own lines. Beyond
// this, lines are dropped and counted.
constexpr size_t max_pending_bytes = 16 << 20;

Result<OwnedFd> open_log(const std::string &path)
{
    OpenedFile opened = open_for_append(AT_FDCWD, path.c_str(), Owner::is(geteuid()), true,
                                        private_file_mode(path));
    if (!opened)
        return Result<OwnedFd>::failure(opened.status(), opened.why());
    // In the program's table it goes high, out of the way of its numbers;
    // in the private one no number of the program's is taken.
    return OwnedFd::adopt(std::move(opened->fd), !on_private_files_thread());
}

} // namespace

void AppendFileSink::open_path()
{
    Result<OwnedFd> opened = open_log(path_);
    why_not_ = opened.why();
    fd_ = std::move(*opened);
}

AppendFileSink::AppendFileSink(const std::string &path) : path_(path)
{
    run_with_private_files([this] { open_path(); });
}

AppendFileSink::~AppendFileSink()
{
    flush_();
    if (fd_.valid())
        run_with_private_files([this] { fd_.reset(); });
}

void AppendFileSink::descriptor_left_with_parent()
{
    fd_.forget();
}

void AppendFileSink::sink_it_(const spdlog::details::log_msg &msg)
{
    // The payload is already a whole JSON line (newline included); no
    // pattern formatting is applied to it.
    if (write_errno_ && pending_.size() >= max_pending_bytes) {
        ++dropped_lines_;
        return;
    }
    pending_.append(msg.payload.data(), msg.payload.data() + msg.payload.size());
    if (pending_.size() >= flush_threshold && !write_errno_)
        flush_();
}

// Once per flush, in the consumer (never on a recording thread's push):
// one fstat. Where the descriptor is in the private table the program
// cannot have closed it; where it is in the program's (no private thread)
// it may have. False when the log cannot be written; `reopened` when the
// program had closed it.
bool AppendFileSink::still_ours_or_reopened(bool &reopened)
{
    if (fd_.still_ours()) // false for no descriptor too
        return true;
    reopened = fd_.valid();
    fd_.forget(); // the program's now, or nobody's: never closed by us
    open_path();
    return fd_.valid();
}

void AppendFileSink::say_reopened()
{
    if (said_reopened_)
        return;
    said_reopened_ = true;
    if (fd_.valid())
        diagnostics().warn("the program closed the event log's descriptor; '{}' is open again "
                           "and no event was lost",
                           path_);
    else
        diagnostics().error("the program closed the event log's descriptor and '{}' cannot be "
                            "opened again: it {}",
                            path_, why_not_);
}

void AppendFileSink::flush_()
{
    if (pending_.size() == 0)
        return;
    bool reopened = false;
    // Said after, on the caller: the private table has no stderr.
    run_with_private_files([&] { write_pending(reopened); });
    if (reopened)
        say_reopened();
}

void AppendFileSink::write_pending(bool &reopened)
{
    if (!still_ours_or_reopened(reopened)) {
        write_errno_ = EBADF;
        return;
    }
    const char *data = pending_.data();
    size_t left = pending_.size();
    while (left > 0) {
        ssize_t written = ::write(fd_.get(), data, left);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0) {
            // Disk full or similar: kept for the next flush; the worker
            // never blocks on it.
            write_errno_ = written < 0 ? errno : ENOSPC;
            std::memmove(pending_.data(), data, left);
            pending_.resize(left);
            return;
        }
        file_ends_mid_line_ = data[written - 1] != '\n';
        data += written;
        left -= static_cast<size_t>(written);
    }
    write_errno_ = 0;
    pending_.clear();
}

size_t AppendFileSink::cut_line_rest() const
{
    if (!file_ends_mid_line_)
        return 0;
    const char *begin = pending_.data();
    const char *newline = static_cast<const char *>(memchr(begin, '\n', pending_.size()));
    return newline ? static_cast<size_t>(newline - begin) + 1 : pending_.size();
}

uint64_t AppendFileSink::waiting_lines(size_t from) const
{
    uint64_t lines = 0;
    for (size_t at = from; at < pending_.size(); ++at)
        lines += pending_.data()[at] == '\n';
    return lines;
}

} // namespace gdrhook
