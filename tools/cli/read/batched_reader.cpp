// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/batched_reader.h"

#include <algorithm>
#include <deque>

namespace gdrhook::cli {

// Passes a file's malformed lines on when reading one event of each file
// in turn would have reported them: right after the event before them was
// taken. A line read in a batch ahead of that waits here.
class BatchedLogReader::HeldMessages : public MalformedLineSink {
public:
    HeldMessages(MalformedLineSink &sink, size_t files)
        : sink_(sink), digested_(files, 0), taken_(files, 0), held_(files)
    {}

    // One more of the file's steps digested, or taken. Called for every
    // step: the counts are kept apart from the held lines, which are rare.
    void digested(size_t file) { ++digested_[file]; }
    void taken(size_t file)
    {
        ++taken_[file];
        if (held_count_ == 0)
            return;
        auto &held = held_[file];
        while (!held.empty() && held.front().after <= taken_[file]) {
            pass_on(static_cast<uint32_t>(file), held.front());
            held.pop_front();
            --held_count_;
        }
    }

    void malformed(uint32_t file, uint64_t line, const std::string &reason) override
    {
        hold(file, Message{digested_[file], line, false, reason});
    }
    void unfinished_last_line(uint32_t file, uint64_t line) override
    {
        hold(file, Message{digested_[file], line, true, {}});
    }

private:
    struct Message {
        uint64_t after; // due once this many of the file's steps are taken
        uint64_t line;
        bool unfinished;
        std::string reason;
    };

    void hold(uint32_t file, Message message)
    {
        if (held_[file].empty() && message.after <= taken_[file]) {
            pass_on(file, message);
            return;
        }
        held_[file].push_back(std::move(message));
        ++held_count_;
    }
    void pass_on(uint32_t file, const Message &message)
    {
        if (message.unfinished)
            sink_.unfinished_last_line(file, message.line);
        else
            sink_.malformed(file, message.line, message.reason);
    }

    MalformedLineSink &sink_;
    std::vector<uint64_t> digested_, taken_;
    std::vector<std::deque<Message>> held_;
    size_t held_count_ = 0;
};

// One file's steps digested but not yet taken, and the events (with their
// lines) of those that come with their event.
struct BatchedLogReader::Queue {
    std::vector<JobStep> steps;
    std::vector<LogEvent> details;
    std::vector<SourceLocation> detail_places;
    size_t next_step = 0;
    size_t next_detail = 0;
    bool ended = false; // the file has no more events

    size_t left() const { return steps.size() - next_step; }
};

BatchedLogReader::BatchedLogReader(std::vector<std::string> paths, MalformedLineSink &sink,
                                   JobStepConsumer &consumer, size_t parse_threads, size_t steps)
    : held_(std::make_unique<HeldMessages>(sink, paths.size())), files_(std::move(paths), *held_),
      consumer_(consumer), workers_(files_.size() > 1 ? std::min(parse_threads, files_.size()) : 0),
      steps_(steps)
{}

BatchedLogReader::~BatchedLogReader() = default;

std::vector<std::string> BatchedLogReader::open()
{
    events_.reset(); // an earlier open()'s workers
    queues_.clear();
    queues_.resize(files_.size());
    merge_.reserve(files_.size());
    batch_ = std::clamp(steps_ / std::max<size_t>(files_.size(), 1), min_batch, max_batch);
    steps_left_ = std::vector<std::atomic<size_t>>(files_.size());
    // Every file opens, then the workers start, then each file's first
    // batch is digested in the files' order: the messages of those
    // batches come out in the order they did when each file's was
    // digested as it opened, and the files that do not open are told
    // after them (by the caller), as before.
    std::vector<std::string> errors = files_.open([](size_t) {});
    size_t batch_bytes = batch_ * (sizeof(LogEvent) + sizeof(SourceLocation));
    events_ = std::make_unique<ParseAhead>(files_, *held_, workers_, ahead_budget / batch_bytes,
                                           [this](size_t file) { return events_wanted(file); });
    for (size_t file = 0; file < files_.size(); ++file) {
        if (!files_.reader(file)) {
            queues_[file].ended = true; // nothing to read: top_up_low_files() passes it by
            continue;
        }
        top_up(file);
        if (queues_[file].left())
            merge_.push(queues_[file].steps.front().ts_ns, file);
    }
    return errors;
}

// Digests the file's next events until its queue holds a batch of steps
// or the file ends.
void BatchedLogReader::top_up(size_t file)
{
    Queue &q = queues_[file];
    q.steps.erase(q.steps.begin(), q.steps.begin() + static_cast<ptrdiff_t>(q.next_step));
    q.details.erase(q.details.begin(), q.details.begin() + static_cast<ptrdiff_t>(q.next_detail));
    q.detail_places.erase(q.detail_places.begin(),
                          q.detail_places.begin() + static_cast<ptrdiff_t>(q.next_detail));
    q.next_step = q.next_detail = 0;
    SourceLocation where;
    while (q.steps.size() < batch_) {
        const LogEvent *event = events_->next(file, where);
        if (!event) {
            q.ended = true;
            break;
        }
        if (event->ts_ns < min_ts_)
            continue;
        JobStep step = consumer_.digest(*event, where);
        step.ts_ns = event->ts_ns; // the merge's key, whatever the consumer said
        q.steps.push_back(step);
        if (step.has_detail()) {
            q.details.push_back(*event);
            q.detail_places.push_back(where);
        }
        held_->digested(file);
    }
    // Before the workers may start on the file's next batch (pause()).
    steps_left_[file].store(q.left(), std::memory_order_relaxed);
    events_->pause(file);
}

// How many events a batch parsed ahead for the file may hold: what its
// next top_up() takes at least, so that none waits in memory from one
// top-up to the next. That is what the queue lacks of a batch now (it
// only shrinks until then), and more than half a batch, since a file is
// topped up only when it has less than that left (with min_ts_, the
// events skipped count in the batch and not in the queue: fewer still).
size_t BatchedLogReader::events_wanted(size_t file) const
{
    size_t left = std::min(steps_left_[file].load(std::memory_order_relaxed), batch_);
    return std::max(batch_ - left, batch_ / 2 + 1);
}

// Files read alike run low at about the same time: every file with less
// than half a batch left gets a whole one, one file after another, and
// the merge then runs on steps alone, which stay in cache, until a file
// runs out again.
void BatchedLogReader::top_up_low_files()
{
    for (size_t file = 0; file < queues_.size(); ++file)
        if (!queues_[file].ended && queues_[file].left() < batch_ / 2)
            top_up(file);
}

void BatchedLogReader::run()
{
    const SourceLocation no_place;
    while (!merge_.empty()) {
        size_t file = merge_.top();
        Queue &q = queues_[file];
        const JobStep &step = q.steps[q.next_step++];
        if (step.has_detail()) {
            size_t detail = q.next_detail++;
            consumer_.take(step, &q.details[detail], q.detail_places[detail]);
        } else {
            consumer_.take(step, nullptr, no_place);
        }
        held_->taken(file);
        steps_left_[file].store(q.left(), std::memory_order_relaxed);
        if (!q.left() && !q.ended)
            top_up_low_files();
        // The next step's time is read at once, below; the one after it
        // when the file is on top again, after about one step of every
        // other file. Fetched now, it is in cache by then: a thousand
        // queues read in turn are more streams than the hardware's
        // prefetcher follows.
        if (q.left() > 1)
            __builtin_prefetch(&q.steps[q.next_step + 1]);
        if (q.left())
            merge_.replace_top(q.steps[q.next_step].ts_ns);
        else
            merge_.pop_top();
    }
}

} // namespace gdrhook::cli
