// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "log_reader.h"

#include <cstdint>
#include <functional>
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
// Memory is one buffer and one pending event per file, and one parser for
// all: the buffers share a budget (buffer_budget: 16 KiB each for 1,024
// files, 512 KiB for one; a buffer grows for a line up to the limit), so a
// job's thousands of logs fit in bounded memory. Files beyond what the process may hold open (RLIMIT_NOFILE, its
// soft limit raised to the hard one) are closed between reads.
class MergedLogReader {
public:
    static constexpr size_t buffer_budget = 16u << 20;
    static constexpr size_t min_chunk = 16u << 10;
    // Descriptors left for everything else (stdio, the output file).
    static constexpr size_t reserved_fds = 64;

    MergedLogReader(std::vector<std::string> paths, MalformedLineSink &sink);

    // Opens every file; returns one message per file that cannot be read.
    // The files that open are still read.
    std::vector<std::string> open();

    // Skip events before this time (gdrhook run: only this run's events).
    void set_min_ts(int64_t ts_ns) { min_ts_ = ts_ns; }

    // Called with each file's next event as soon as it is parsed, which in
    // a job's merge is about one event per file before next() returns it:
    // time for the consumer to prefetch what the event will touch.
    void set_lookahead(std::function<void(const LogEvent &, const SourceLocation &)> lookahead)
    {
        lookahead_ = std::move(lookahead);
    }

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
    // The pending event's time sits in the heap itself, so sifting reads
    // one array and not every source's event.
    struct HeapEntry {
        int64_t ts_ns;
        size_t source;
    };
    static bool later(const HeapEntry &a, const HeapEntry &b);
    bool advance(size_t source);
    void push(size_t source);
    void replace_top(int64_t ts_ns);

    std::vector<std::string> paths_;
    MalformedLineSink &sink_;
    std::unique_ptr<StringTable> strings_;
    std::unique_ptr<LineParser> parser_;
    std::vector<Source> sources_;
    std::vector<HeapEntry> heap_; // min ts_ns on top, ties by file index
    size_t current_ = SIZE_MAX;   // the source whose event was last returned (on top)
    int64_t min_ts_ = INT64_MIN;
    std::function<void(const LogEvent &, const SourceLocation &)> lookahead_;
};

} // namespace gdrhook::cli

