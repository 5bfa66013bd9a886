// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/append_file_sink.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace gdrhook {

namespace {
constexpr size_t flush_threshold = 64 * 1024;
}

AppendFileSink::AppendFileSink(const std::string &path)
{
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0)
        open_errno_ = errno;
}

AppendFileSink::~AppendFileSink()
{
    flush_();
    if (fd_ >= 0)
        ::close(fd_);
}

void AppendFileSink::sink_it_(const spdlog::details::log_msg &msg)
{
    // The payload is already a whole JSON line (newline included); no
    // pattern formatting is applied to it.
    pending_.append(msg.payload.data(), msg.payload.data() + msg.payload.size());
    if (pending_.size() >= flush_threshold)
        flush_();
}

void AppendFileSink::flush_()
{
    const char *data = pending_.data();
    size_t left = pending_.size();
    while (left > 0 && fd_ >= 0) {
        ssize_t written = ::write(fd_, data, left);
        if (written < 0) {
            if (errno == EINTR)
                continue;
            break; // disk full or similar: drop rather than block the worker
        }
        data += written;
        left -= static_cast<size_t>(written);
    }
    pending_.clear();
}

} // namespace gdrhook
