// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "job_step.h"
#include "log_file_set.h"
#include "log_reader.h"
#include "time_merge.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gdrhook::cli {

// Reads several logs as MergedLogReader does, one file's batch of events
// at a time rather than one event of each file in turn: a job's 1,024
// interleaved logs otherwise put every event in another process's tables
// and another file's buffer, none of them still in cache (docs/
// performance.md, "A job's logs").
//
// Each event is digested in its file's order as soon as its line is
// parsed; its step (JobStep) waits in its file's queue until the merge by
// time hands it to take(), in the very order MergedLogReader would hand
// out the events (every event has one step, with the event's ts_ns). The
// malformed lines of a file are reported at the same place in that order
// too: held back if they were read ahead of it.
//
// Memory: that of the files (LogFileSet), and step_budget steps shared by
// the files' queues (32 MiB: 1,024 steps each for 1,024 files).
class BatchedLogReader {
public:
    static constexpr size_t step_budget = 1u << 20;
    static constexpr size_t min_batch = 64;
    static constexpr size_t max_batch = 16384;

    BatchedLogReader(std::vector<std::string> paths, MalformedLineSink &sink, JobStepConsumer &consumer);
    ~BatchedLogReader();

    // Skip events before this time (as MergedLogReader::set_min_ts).
    void set_min_ts(int64_t ts_ns) { min_ts_ = ts_ns; }

    // Opens every file and digests its first batch; returns one message
    // per file that cannot be read. The files that open are still read.
    std::vector<std::string> open();

    // Digests and takes every event of every file.
    void run();

    std::vector<std::string> read_errors() const { return files_.read_errors(); }
    uint64_t bytes_read() const { return files_.bytes_read(); }

private:
    class HeldMessages;
    struct Queue;

    void top_up(size_t file);
    void top_up_low_files();

    std::unique_ptr<HeldMessages> held_;
    LogFileSet files_;
    JobStepConsumer &consumer_;
    std::vector<Queue> queues_;
    TimeMerge merge_;
    size_t batch_ = min_batch;
    int64_t min_ts_ = INT64_MIN;
};

} // namespace gdrhook::cli
