// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/job_step.h"
#include "read/log_file_set.h"
#include "read/log_reader.h"
#include "read/parse_ahead.h"
#include "read/time_merge.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gdrhook::cli {

// The one reader of event logs, for every command: reads several logs
// (one per process, usually) as one stream ordered by ts_ns, each file
// keeping its own order (a process's events are written in the order they
// were recorded, which is what per-process checks need, while ts_ns from
// different threads may step back slightly); ties go to the file named
// first. Events before set_min_ts() are skipped.
//
// It reads one file's batch of events at a time rather than one event of
// each file in turn: a job's 1,024 interleaved logs otherwise put every
// event in another process's tables and another file's buffer, none of
// them still in cache (docs/performance.md, "A job's logs"). Each event is
// digested in its file's order as soon as its line is parsed; its step
// (JobStep) waits in its file's queue until the merge by time hands it to
// take(). A consumer that needs each event whole in that order (check,
// timeline, run) makes every step carry its event (EveryEvent). The
// malformed lines of a file are reported at their place in that order
// too: held back if they were read ahead of it, so that the messages are
// those of reading one event of each file in turn.
//
// The lines may be parsed on worker threads ahead of this one
// (ParseAhead): their events are then digested here in the same order,
// and their malformed lines reported at the same places, so that what
// comes out is the same, byte for byte.
//
// Memory: that of the files (LogFileSet), step_budget steps shared by the
// files' queues (32 MiB: 1,024 steps each for 1,024 files), and with
// workers, events parsed ahead in batches of at most a queue's batch of
// steps: as many batches as ahead_budget holds (32 MiB: 74 batches of
// 1,024 events of 424 bytes, 440 with their place), at least one.
class BatchedLogReader {
public:
    static constexpr size_t step_budget = 1u << 20;
    static constexpr size_t min_batch = 64;
    static constexpr size_t max_batch = 16384;
    static constexpr size_t ahead_budget = 32u << 20;

    // @p parse_threads: workers that parse the files' lines ahead of the
    // thread that runs this reader; 0: it parses them itself, as it does
    // for a single file (one stream). More workers than files are not
    // started. @p steps: the queues' budget, step_budget unless a test
    // wants small batches.
    BatchedLogReader(std::vector<std::string> paths, MalformedLineSink &sink,
                     JobStepConsumer &consumer, size_t parse_threads = 0,
                     size_t steps = step_budget);
    ~BatchedLogReader();

    // Skip events before this time (gdrhook run: only this run's events).
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
    size_t events_wanted(size_t file) const;

    std::unique_ptr<HeldMessages> held_;
    LogFileSet files_;
    JobStepConsumer &consumer_;
    const size_t workers_;
    const size_t steps_;
    // Each queue's steps left, for the workers (events_wanted()): written
    // here after each step taken, read as a worker starts a batch.
    std::vector<std::atomic<size_t>> steps_left_;
    std::unique_ptr<ParseAhead> events_; // after files_: its workers stop before the readers go
    std::vector<Queue> queues_;
    TimeMerge merge_;
    size_t batch_ = min_batch;
    int64_t min_ts_ = INT64_MIN;
};

} // namespace gdrhook::cli
