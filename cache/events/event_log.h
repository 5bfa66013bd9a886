// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The event log: one JSON object per line (the schema is in README.md and is
// a stable interface), written through spdlog into a file opened O_APPEND.
// Lines are only ever written whole, so processes that share one file (a
// pattern without %p) never interleave inside a line.
#pragma once

#include "cache/base/owned_fd.h"
#include "cache/base/result.h"
#include "cache/events/event.h"
#include "cache/events/event_line.h"

#include <functional>
#include <memory>
#include <string>

namespace spdlog {
class logger;
}

namespace gdrhook {

class AppendFileSink;

// format_event_line_at (event_line.h) at the event's own time.
size_t format_event_line(const Event &event, int pid, char *out);

class EventLog {
public:
    // An empty path gives a log that drops every line.
    // Fails with why the file cannot be written (the log then drops
    // lines). The file itself is created by the
    // first line: a process that loads the shim but records nothing (a
    // helper process started with the same environment) leaves no empty
    // file behind. Its folder is checked now, so a bad path shows at once.
    Result<void> open(const std::string &path);

    // Whether lines go somewhere (the file may not exist yet).
    bool is_open() const { return !path_.empty() && !failed_; }
    const std::string &path() const { return path_; }

    // What the file starts with (process_line.h), asked when the file is
    // created: a process's first line says who wrote the log.
    using FirstLine = std::function<std::string(int pid)>;
    void set_first_line(FirstLine first_line) { first_line_ = std::move(first_line); }

    // The process's byte cap (GDRHOOK_LOG_MAX_BYTES; 0: none): once a line
    // would take the lines this process wrote past it, no further event is
    // written, only counted, and end_with_capped_line() says how many.
    void set_max_bytes(uint64_t max_bytes) { max_bytes_ = max_bytes; }
    // A forked child writing on in its parent's file counts its own bytes.
    void count_anew() { written_bytes_ = not_written_ = capped_line_said_ = 0; }
    // In a forked child, before anything else of the log: its descriptor
    // is the parent's (append_file_sink.h).
    void after_fork_in_child();
    // Events the cap kept out of the log so far.
    uint64_t not_written() const { return not_written_; }

    // Callers serialize write/flush (the pipeline's consumer lock).
    void write(const Event &event, int pid);
    // Returns whether every line so far reached the file; those that did
    // not (a full file system) are tried again by the next flush.
    bool flush();

    // The errno of the last failed write (0: none since the last success)
    // and the lines dropped while writes failed (append_file_sink.h).
    int write_errno() const;
    bool all_written() const;
    uint64_t dropped_lines() const;

    // Where no journal keeps what the log cannot take (a file system too
    // full for one): a little room is held on the log's file system, in a
    // file without a name, and given back at the end for the line that
    // says how many events were lost.
    void keep_room_for_loss_line();
    // After the last write, where no journal keeps the lines the log lacks:
    // ends the log with a `died` line (event_line.h) saying how many events
    // were lost, `lost` and every line the log dropped or could not write.
    // Returns that count.
    uint64_t end_with_loss_line(uint64_t lost, int pid, uint64_t seq);
    // After the last write, where the cap kept events out: ends the log with
    // the one `capped` line (event_line.h) that says how many, past the cap.
    void end_with_capped_line(int pid, uint64_t seq);

private:
    bool create_file(int pid); // on the first line
    // Whether a line of `length` bytes still fits under the cap; counts it
    // either way (written, or not written).
    bool within_cap(size_t length);

    std::shared_ptr<AppendFileSink> sink_;
    std::shared_ptr<spdlog::logger> logger_;
    std::string path_;
    bool failed_ = false;
    OwnedFd room_; // keep_room_for_loss_line()
    FirstLine first_line_;
    uint64_t max_bytes_ = 0;        // 0: no cap
    uint64_t written_bytes_ = 0;    // this process's lines, handed to the file
    uint64_t not_written_ = 0;      // events past the cap
    uint64_t capped_line_said_ = 0; // not_written_ as the last `capped` line said it
};

} // namespace gdrhook
