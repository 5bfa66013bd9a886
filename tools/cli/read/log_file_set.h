// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/log_reader.h"

#include "cache/base/result.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gdrhook::cli {

// The logs read together (one per process, usually), each with its own
// reader, in bounded memory: one parser for all, and buffers that share a
// budget (buffer_budget: 16 KiB each for 1,024 files, 512 KiB for one; a
// buffer grows for a line up to the limit), so a job's thousands of logs
// fit. Files beyond what the process may hold open (RLIMIT_NOFILE, its
// soft limit raised to the hard one) are closed between reads.
class LogFileSet {
public:
    static constexpr size_t buffer_budget = 16u << 20;
    static constexpr size_t min_chunk = 16u << 10;
    // Descriptors left for everything else (stdio, the output file).
    static constexpr size_t reserved_fds = 64;

    // @p sink hears of every file's malformed lines, by file index.
    LogFileSet(std::vector<std::string> paths, MalformedLineSink &sink);

    // Opens every file; returns one message per file that cannot be read.
    // The files that open are still read. @p opened(i) is called as each
    // file opens, in order.
    template <typename Opened> std::vector<std::string> open(Opened &&opened)
    {
        std::vector<std::string> errors;
        prepare();
        for (size_t i = 0; i < paths_.size(); ++i) {
            if (const Result<void> one = open_one(i); !one)
                errors.push_back(one.why());
            else
                opened(i);
        }
        return errors;
    }

    size_t size() const { return paths_.size(); }
    // Null for a file that did not open.
    LogFileReader *reader(size_t file) { return readers_[file].get(); }

    // Read errors met while reading (a file that went away, EIO).
    std::vector<std::string> read_errors() const;

    const std::vector<std::string> &paths() const { return paths_; }
    uint64_t bytes_read() const;
    StringTable &strings() { return *strings_; }

private:
    void prepare();
    Result<void> open_one(size_t file);

    std::vector<std::string> paths_;
    MalformedLineSink &sink_;
    std::unique_ptr<StringTable> strings_;
    std::unique_ptr<LineParser> parser_;
    std::vector<std::unique_ptr<LogFileReader>> readers_;
    size_t chunk_ = 0;
    size_t kept_open_ = 0;
};

} // namespace gdrhook::cli
