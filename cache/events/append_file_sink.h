// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// An spdlog sink that appends whole lines to a file with write(2). spdlog's
// own file sink goes through a stdio buffer that may split a line across two
// writes; with several processes appending to one file that interleaves
// their lines. This sink buffers complete lines and hands them to the kernel
// in one write each time it flushes.
//
// The file is opened by the rules of append_open.h (no symbolic link, no
// FIFO, nobody else's file) and its descriptor is kept far above the
// program's own (owned_fd.h). Before each flush it checks the descriptor
// still names the log: a program that closed it (closefrom) gets its
// number back untouched and the log is opened again. Lines a write could
// not take (a full file system) stay buffered for the next flush; the
// pipeline keeps their events in the journal meanwhile.
#pragma once

#include "cache/base/owned_fd.h"

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>

#include <cstdint>
#include <string>

namespace gdrhook {

class AppendFileSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
public:
    // Opens `path` (append_open.h). Check fd() >= 0, else why_not().
    explicit AppendFileSink(const std::string &path);
    ~AppendFileSink() override;

    int fd() const { return fd_.get(); }
    const std::string &why_not() const { return why_not_; }

    // Whether every line handed over so far reached the file.
    bool all_written() const { return pending_.size() == 0; }
    // The errno of the last failed write, 0 once one succeeds again.
    int write_errno() const { return write_errno_; }
    // Lines dropped because too many were waiting (write_errno() set).
    uint64_t dropped_lines() const { return dropped_lines_; }

protected:
    void sink_it_(const spdlog::details::log_msg &msg) override;
    void flush_() override;

private:
    bool still_ours_or_reopened();

    std::string path_; // absolute: the program may change its folder
    OwnedFd fd_;
    std::string why_not_;
    int write_errno_ = 0;
    uint64_t dropped_lines_ = 0;
    bool said_reopened_ = false;
    spdlog::memory_buf_t pending_;
};

} // namespace gdrhook
