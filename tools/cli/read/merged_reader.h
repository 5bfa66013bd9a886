// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/log_file_set.h"
#include "read/log_reader.h"
#include "read/time_merge.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace gdrhook::cli {

// Reports malformed lines as "FILE:LINE: malformed line: REASON" on a
// stream, the first few per file, and counts them all.
class MalformedLineReport : public MalformedLineSink {
public:
    static constexpr uint64_t shown_per_file = 20;

    MalformedLineReport(std::ostream &out, const std::vector<std::string> &paths);
    void malformed(uint32_t file, uint64_t line, const std::string &reason) override;
    void unfinished_last_line(uint32_t file, uint64_t line) override;

    // Prints how many were not shown, per file.
    void finish();
    uint64_t total() const { return total_; }

private:
    std::ostream &out_;
    const std::vector<std::string> &paths_;
    std::vector<uint64_t> per_file_;
    uint64_t total_ = 0;
};

// Reads several logs (one per process, usually) as one stream ordered by
// ts_ns. Each file keeps its own order: a process's events are written in
// the order they were recorded, which is what per-process checks need,
// while ts_ns from different threads may step back slightly.
//
// Memory is that of the files (LogFileSet: one buffer each in a shared
// budget, one parser for all) and one pending event per file.
class MergedLogReader {
public:
    MergedLogReader(std::vector<std::string> paths, MalformedLineSink &sink);

    // Opens every file; returns one message per file that cannot be read.
    // The files that open are still read.
    std::vector<std::string> open();

    // Skip events before this time (gdrhook run: only this run's events).
    void set_min_ts(int64_t ts_ns) { min_ts_ = ts_ns; }

    // The next event across all files, or nullptr at the end. The event
    // stays valid until the next call.
    const LogEvent *next(SourceLocation &where);

    // Read errors met while reading (a file that went away, EIO).
    std::vector<std::string> read_errors() const { return files_.read_errors(); }

    const std::vector<std::string> &paths() const { return files_.paths(); }
    uint64_t bytes_read() const { return files_.bytes_read(); }
    StringTable &strings() { return files_.strings(); }

private:
    struct Pending {
        LogEvent event;
        SourceLocation where;
    };
    bool advance(size_t file);

    LogFileSet files_;
    std::vector<Pending> pending_; // each file's next event
    TimeMerge merge_;
    size_t current_ = SIZE_MAX; // the file whose event was last returned (on top)
    int64_t min_ts_ = INT64_MIN;
};

} // namespace gdrhook::cli

