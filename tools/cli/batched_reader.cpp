// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "batched_reader.h"

#include <algorithm>
#include <deque>

namespace gdrhook::cli {

// Passes a file's malformed lines on when MergedLogReader would have
// reported them: right after the event before them was taken. A line read
// in a batch ahead of that waits here.
class BatchedLogReader::HeldMessages : public MalformedLineSink {
public:
    HeldMessages(MalformedLineSink &sink, size_t files) : sink_(sink), files_(files) {}

    // The file's steps digested so far, and taken so far.
    void digested(size_t file) { ++files_[file].digested; }
    void taken(size_t file)
    {
        File &f = files_[file];
        ++f.taken;
        while (!f.held.empty() && f.held.front().after <= f.taken) {
            pass_on(file, f.held.front());
            f.held.pop_front();
        }
    }

    void malformed(uint32_t file, uint64_t line, const std::string &reason) override
    {
        hold(file, Message{files_[file].digested, line, false, reason});
    }
    void unfinished_last_line(uint32_t file, uint64_t line) override
    {
        hold(file, Message{files_[file].digested, line, true, {}});
    }

private:
    struct Message {
        uint64_t after; // due once this many of the file's steps are taken
        uint64_t line;
        bool unfinished;
        std::string reason;
    };
    struct File {
        uint64_t digested = 0;
        uint64_t taken = 0;
        std::deque<Message> held;
    };

    void hold(uint32_t file, Message message)
    {
        File &f = files_[file];
        if (f.held.empty() && message.after <= f.taken)
            pass_on(file, message);
        else
            f.held.push_back(std::move(message));
    }
    void pass_on(uint32_t file, const Message &message)
    {
        if (message.unfinished)
            sink_.unfinished_last_line(file, message.line);
        else
            sink_.malformed(file, message.line, message.reason);
    }

    MalformedLineSink &sink_;
    std::vector<File> files_;
};

// One file's steps digested but not yet taken, and the events of those
// that come with their event.
struct BatchedLogReader::Queue {
    std::vector<JobStep> steps;
    std::vector<LogEvent> details;
    size_t next_step = 0;
    size_t next_detail = 0;
};

BatchedLogReader::BatchedLogReader(std::vector<std::string> paths, MalformedLineSink &sink,
                                   JobStepConsumer &consumer)
    : held_(std::make_unique<HeldMessages>(sink, paths.size())), files_(std::move(paths), *held_),
      consumer_(consumer)
{
}

BatchedLogReader::~BatchedLogReader() = default;

std::vector<std::string> BatchedLogReader::open()
{
    queues_.clear();
    queues_.resize(files_.size());
    merge_.reserve(files_.size());
    batch_ = std::clamp(step_budget / std::max<size_t>(files_.size(), 1), min_batch, max_batch);
    return files_.open([&](size_t file) {
        if (refill(file))
            merge_.push(queues_[file].steps.front().ts_ns, file);
    });
}

// Digests the file's next batch of events into its (empty) queue; false at
// the end of the file.
bool BatchedLogReader::refill(size_t file)
{
    Queue &q = queues_[file];
    q.steps.clear();
    q.details.clear();
    q.next_step = q.next_detail = 0;
    LogFileReader &reader = *files_.reader(file);
    LogEvent event;
    SourceLocation where;
    while (q.steps.size() < batch_ && reader.next(event, where)) {
        if (event.ts_ns < min_ts_)
            continue;
        JobStep step = consumer_.digest(event, where);
        step.ts_ns = event.ts_ns; // the merge's key, whatever the consumer said
        q.steps.push_back(step);
        if (step.has_detail())
            q.details.push_back(event);
        held_->digested(file);
    }
    return !q.steps.empty();
}

void BatchedLogReader::run()
{
    while (!merge_.empty()) {
        size_t file = merge_.top();
        Queue &q = queues_[file];
        const JobStep &step = q.steps[q.next_step++];
        consumer_.take(step, step.has_detail() ? &q.details[q.next_detail++] : nullptr);
        held_->taken(file);
        if (q.next_step < q.steps.size() || refill(file))
            merge_.replace_top(q.steps[q.next_step].ts_ns);
        else
            merge_.pop_top();
    }
}

} // namespace gdrhook::cli
