// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// An spdlog sink that appends whole lines to a file with write(2). spdlog's
// own file sink goes through a stdio buffer that may split a line across two
// writes; with several processes appending to one file that interleaves
// their lines. This sink buffers complete lines and hands them to the kernel
// in one write each time it flushes.
//
// The file is opened by the rules of safe_file.h (no symbolic link, no
// FIFO, nobody else's file), and opened, written and closed on the thread
// whose descriptor table the program cannot reach (private_files.h): no
// close or dup3 of the program's touches it, and it takes none of the
// program's numbers. Where there is no such thread its descriptor is kept
// far above the program's own (owned_fd.h) and checked before each flush:
// a program that closed it (closefrom) gets its number back untouched and
// the log is opened again. Lines a write could
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
    // Opens `path` (safe_file.h). Check fd() >= 0, else why_not().
    explicit AppendFileSink(const std::string &path);
    ~AppendFileSink() override;

    int fd() const { return fd_.get(); }
    // In a forked child: the descriptor is the parent's (and, held in the
    // parent's private table, not even in the child's); the next flush
    // opens the log again, as the child's.
    void descriptor_left_with_parent();
    const std::string &why_not() const { return why_not_; }

    // Whether every line handed over so far reached the file.
    bool all_written() const { return pending_.size() == 0; }
    // The errno of the last failed write, 0 once one succeeds again.
    int write_errno() const { return write_errno_; }
    // Lines dropped because too many were waiting (write_errno() set).
    uint64_t dropped_lines() const { return dropped_lines_; }

    // Ends a log whose lines could not all be written, where no journal
    // keeps them: the line a full disk cut is finished, the lines still
    // waiting are dropped and counted, and `loss_line(lost)` is appended,
    // `lost` being `lost_elsewhere` and every line this sink dropped.
    // Returns `lost`. After the last write; nothing is written after it.
    template <typename LossLine>
    uint64_t end_with_loss_line(uint64_t lost_elsewhere, LossLine &&loss_line)
    {
        const size_t cut_rest = cut_line_rest();
        const uint64_t lost = lost_elsewhere + dropped_lines_ + waiting_lines(cut_rest);
        const std::string line = loss_line(lost);
        pending_.resize(cut_rest);
        pending_.append(line.data(), line.data() + line.size());
        flush_();
        return lost;
    }

protected:
    void sink_it_(const spdlog::details::log_msg &msg) override;
    void flush_() override;

private:
    // Opens path_ into fd_, or says why not in why_not_.
    void open_path();
    bool still_ours_or_reopened(bool &reopened);
    void say_reopened();
    // flush_()'s work, on the private thread (private_files.h).
    void write_pending(bool &reopened);
    // The bytes of pending_ that finish a line the file holds the start of
    // (a write that took part of a batch), 0 when the file ends in a newline.
    size_t cut_line_rest() const;
    // The whole lines in pending_ after its first `from` bytes.
    uint64_t waiting_lines(size_t from) const;

    std::string path_; // absolute (start_folder.h): the program may change its folder
    OwnedFd fd_;
    std::string why_not_;
    int write_errno_ = 0;
    uint64_t dropped_lines_ = 0;
    bool said_reopened_ = false;
    bool file_ends_mid_line_ = false; // the last write stopped inside a line
    spdlog::memory_buf_t pending_;
};

} // namespace gdrhook
