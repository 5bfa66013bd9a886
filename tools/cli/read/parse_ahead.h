// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/log_event.h"
#include "read/log_file_set.h"
#include "read/log_reader.h"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gdrhook::cli {

// Each file's events in its own order, for the one thread that reads them
// (BatchedLogReader), parsed ahead on worker threads where they were:
// parsing is most of what the summary of a job costs, and each file is a
// stream of its own (docs/performance.md, "A job's logs"). With no
// workers, every file is read on the reading thread, as its reader alone
// would.
//
// Each worker has its own parser and string table; the string views of
// the events it parses point into that table, which lives as long as the
// ParseAhead (what a consumer keeps it copies: SummaryBuilder interns its
// own). A file's reader is used by one thread at a time: by a worker while
// it parses a batch of the file, by the reading thread while it has
// claimed the file (from its first next() after a pause() to the next
// pause()); every hand-off goes through the one mutex.
//
// A file's malformed lines reach the sink just where its reader would
// have reported them, on the reading thread: a line a worker met is kept
// as a note with its place among the batch's events, and reported just
// before the event after it, or when the file is asked for more after the
// batch's last event.
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

    // Starts @p workers threads; none: every file is read by the caller.
    ParseAhead(LogFileSet &files, MalformedLineSink &sink, size_t workers, size_t max_batches,
               BatchSize batch_size);
    // Stops the workers (each ends the batch it is on) and joins them.
    ~ParseAhead();
    ParseAhead(const ParseAhead &) = delete;
    ParseAhead &operator=(const ParseAhead &) = delete;

    // The file's next event, or nullptr at its end. Valid until the next
    // call. Rethrows what stopped a worker.
    const LogEvent *next(size_t file, SourceLocation &where);

    // The file is not read again for a while: workers may parse its next
    // events meanwhile.
    void pause(size_t file);

private:
    // A run of one file's events, parsed on a worker, with the lines its
    // reader reported while reading them (notes), each at its place.
    struct Batch {
        struct Note {
            size_t before = 0; // how many of the batch's events came before the line
            uint64_t line = 0;
            bool unfinished = false; // an unfinished last line, else a malformed one
            std::string reason;
        };
        std::vector<LogEvent> events;
        std::vector<SourceLocation> where; // each event's
        std::vector<Note> notes;           // by line
        bool ended = false;                // the file has nothing after these
        std::exception_ptr failure;        // what stopped the worker, for claim() to rethrow

        void read(LogFileReader &reader, LineParser &parser, size_t count);
        void clear(); // empty, for another file; keeps its vectors' memory
    };

    // A file as the reading thread reads it: the batch it is in, if any,
    // with the batch's notes (they may outlast it, see pause()), and
    // whether it has claimed the file's reader.
    struct Place {
        std::unique_ptr<Batch> batch;
        std::vector<Batch::Note> notes;
        size_t next_event = 0;
        size_t next_note = 0;
        bool claimed = false;
        bool ended = false; // its reader is at the end of the file
    };

    enum class State : uint8_t { idle, queued, parsing, ready, claimed, ended };
    struct Worker;

    // The reading thread's side.
    const LogEvent *read_here(size_t file, Place &place, SourceLocation &where);
    void report_notes_due(size_t file, Place &place);
    // The file's batch parsed ahead, once the worker on it is done; or
    // nullptr when none was parsed (a queued job is taken back): read the
    // file here. Either way the file's reader is the caller's until
    // release().
    std::unique_ptr<Batch> claim(size_t file);
    // The file's reader back: workers may read on ahead, unless @p ended.
    void release(size_t file, bool ended);
    // A batch claim() returned, read: for another job.
    void recycle(std::unique_ptr<Batch> batch);

    // The workers' side.
    void start(size_t workers, size_t max_batches);
    void work(Worker &worker);
    void parse(size_t file, Batch &batch, Worker &worker) noexcept;
    void queue_jobs();
    void stop();

    LogFileSet &files_;
    MalformedLineSink &sink_;
    const BatchSize batch_size_;
    // The reading thread's only.
    std::vector<Place> places_;
    LogEvent event_; // read here
    std::mutex mutex_;
    std::condition_variable job_queued_;   // workers wait on it
    std::condition_variable batch_parsed_; // the reading thread waits on it
    // Under mutex_:
    std::vector<State> state_;                   // by file
    std::vector<std::unique_ptr<Batch>> ready_;  // by file
    std::vector<size_t> jobs_;                   // files, the newest last
    std::vector<std::unique_ptr<Batch>> spares_; // one for each job, at least
    size_t idle_ = 0;                            // files in State::idle
    size_t cursor_ = 0;                          // the next file to look at
    size_t awaited_ = SIZE_MAX;                  // the file the reading thread waits for
    bool stopping_ = false;
    std::vector<std::unique_ptr<Worker>> workers_; // last: stopped before the rest goes
};

} // namespace gdrhook::cli
