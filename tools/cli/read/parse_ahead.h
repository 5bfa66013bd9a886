// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/log_file_set.h"
#include "read/parsed_batch.h"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace gdrhook::cli {

// Parses the next events of several files on worker threads, ahead of the
// one thread that reads them (BatchedLogReader, through FileEvents):
// parsing is most of what the summary of a job costs, and each file is a
// stream of its own (docs/performance.md, "A job's logs").
//
// Each worker has its own parser and string table; the string views of
// the events it parses point into that table, which lives as long as the
// ParseAhead (what a consumer keeps it copies: SummaryBuilder interns its
// own). A file's reader is used by one thread at a time: by a worker while
// it parses a batch of the file, by the reading thread between claim() and
// release(); every hand-off goes through the one mutex.
//
// Which files: a cursor walks them in index order, the order
// BatchedLogReader tops them up in, and queues a job for each file that
// has no batch ahead; when the reading thread claims a file the cursor
// has not come to, the cursor goes on from the file after it. A job takes
// one of max_batches batches, kept and reused (a queued job, one being
// parsed, a batch waiting or being read): that bounds the memory. Workers
// take the newest job, the farthest ahead, since the reading thread parses
// a file itself when it reaches one still queued; it waits only for a
// file a worker is on.
//
// One difference from one thread reading every file with one table: past
// StringTable's limit of distinct strings (4,096 in a log with more
// distinct names than any real one), the names each table lumps together
// as "(other)" depend on what each worker read first.
class ParseAhead {
public:
    // How many events the file's next batch is to hold; asked as a worker
    // starts it, on the worker's thread.
    using BatchSize = std::function<size_t(size_t file)>;

    // Starts @p workers threads (at least one).
    ParseAhead(LogFileSet &files, size_t workers, size_t max_batches, BatchSize batch_size);
    // Stops the workers (each ends the batch it is on) and joins them.
    ~ParseAhead();
    ParseAhead(const ParseAhead &) = delete;
    ParseAhead &operator=(const ParseAhead &) = delete;

    // For the reading thread. The file's batch parsed ahead, once the
    // worker on it is done; or nullptr when none was parsed (a queued job
    // is taken back): read the file yourself. Either way the file's reader
    // is the caller's until release(). Rethrows what stopped a worker.
    std::unique_ptr<ParsedBatch> claim(size_t file);
    // The file's reader back: workers may read on ahead, unless @p ended.
    void release(size_t file, bool ended);
    // A batch claim() returned, read: for another job.
    void recycle(std::unique_ptr<ParsedBatch> batch);

private:
    enum class State : uint8_t { idle, queued, parsing, ready, claimed, ended };
    struct Worker;

    void work(Worker &worker);
    void parse(size_t file, ParsedBatch &batch, Worker &worker) noexcept;
    void queue_jobs();
    void stop();

    LogFileSet &files_;
    const BatchSize batch_size_;
    std::mutex mutex_;
    std::condition_variable job_queued_;   // workers wait on it
    std::condition_variable batch_parsed_; // the reading thread waits on it
    // Under mutex_:
    std::vector<State> state_;                         // by file
    std::vector<std::unique_ptr<ParsedBatch>> ready_;  // by file
    std::vector<size_t> jobs_;                         // files, the newest last
    std::vector<std::unique_ptr<ParsedBatch>> spares_; // one for each job, at least
    size_t idle_ = 0;           // files in State::idle
    size_t cursor_ = 0;         // the next file to look at
    size_t awaited_ = SIZE_MAX; // the file the reading thread waits for
    bool stopping_ = false;
    std::vector<std::unique_ptr<Worker>> workers_;
};

} // namespace gdrhook::cli
