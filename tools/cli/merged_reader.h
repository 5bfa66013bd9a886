// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "log_reader.h"

#include <cstdint>
#include <iosfwd>
#include <memory>
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
// while ts_ns from different threads may step back slightly. Memory is one
// buffer and one pending event per file.
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
    std::vector<std::string> read_errors() const;

    const std::vector<std::string> &paths() const { return paths_; }
    uint64_t bytes_read() const;
    StringTable &strings() { return *strings_; }

private:
    struct Source {
        std::unique_ptr<LogFileReader> reader;
        LogEvent pending;
        SourceLocation where;
    };
    bool advance(size_t source);
    bool comes_after(size_t a, size_t b) const;
    void push(size_t source);
    size_t pop();

    std::vector<std::string> paths_;
    MalformedLineSink &sink_;
    std::unique_ptr<StringTable> strings_;
    std::vector<Source> sources_;
    std::vector<size_t> heap_;    // indices into sources_, min ts_ns on top
    size_t current_ = SIZE_MAX;   // the source whose event was last returned
    int64_t min_ts_ = INT64_MIN;
};

} // namespace gdrhook::cli

