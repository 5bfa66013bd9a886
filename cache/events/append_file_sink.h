// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// An spdlog sink that appends whole lines to a file with write(2). spdlog's
// own file sink goes through a stdio buffer that may split a line across two
// writes; with several processes appending to one file that interleaves
// their lines. This sink buffers complete lines and hands them to the kernel
// in one write each time it flushes.
#pragma once

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>

#include <string>

namespace gdrhook {

class AppendFileSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex>
{
public:
    // Opens `path` with O_APPEND|O_CREAT|O_CLOEXEC. Check fd() >= 0.
    explicit AppendFileSink(const std::string &path);
    ~AppendFileSink() override;

    int fd() const { return fd_; }
    int open_errno() const { return open_errno_; }

protected:
    void sink_it_(const spdlog::details::log_msg &msg) override;
    void flush_() override;

private:
    int fd_ = -1;
    int open_errno_ = 0;
    spdlog::memory_buf_t pending_;
};

} // namespace gdrhook
