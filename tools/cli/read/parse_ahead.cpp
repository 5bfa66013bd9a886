// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/parse_ahead.h"

#include <algorithm>
#include <thread>

namespace gdrhook::cli {

struct ParseAhead::Worker {
    StringTable strings;
    LineParser parser{strings};
    std::thread thread;
};

ParseAhead::ParseAhead(LogFileSet &files, MalformedLineSink &sink, size_t workers,
                       size_t max_batches, BatchSize batch_size)
    : files_(files), sink_(sink), batch_size_(std::move(batch_size)), places_(files.size())
{
    if (workers > 0)
        start(workers, max_batches);
}

ParseAhead::~ParseAhead()
{
    stop();
}

// ---- the reading thread --------------------------------------------------

const LogEvent *ParseAhead::next(size_t file, SourceLocation &where)
{
    Place &place = places_[file];
    if (workers_.empty() || (place.claimed && !place.batch))
        return read_here(file, place, where);
    for (;;) {
        report_notes_due(file, place);
        if (place.batch) {
            Batch &batch = *place.batch;
            if (place.next_event < batch.events.size()) {
                where = batch.where[place.next_event];
                return &batch.events[place.next_event++];
            }
            recycle(std::move(place.batch));
        }
        place.notes.clear();
        place.next_event = place.next_note = 0;
        if (place.ended || place.claimed)
            break; // the rest of this round is read here
        place.claimed = true;
        place.batch = claim(file);
        if (!place.batch)
            break;
        place.notes.swap(place.batch->notes);
        place.ended = place.batch->ended;
    }
    return read_here(file, place, where);
}

const LogEvent *ParseAhead::read_here(size_t file, Place &place, SourceLocation &where)
{
    if (place.ended)
        return nullptr;
    if (files_.reader(file)->next(event_, where))
        return &event_;
    place.ended = true;
    return nullptr;
}

// The batch's lines its reader met before the next event, or after the
// last one once that is out.
void ParseAhead::report_notes_due(size_t file, Place &place)
{
    for (; place.next_note < place.notes.size() &&
           place.notes[place.next_note].before <= place.next_event;
         ++place.next_note) {
        const Batch::Note &note = place.notes[place.next_note];
        if (note.unfinished)
            sink_.unfinished_last_line(static_cast<uint32_t>(file), note.line);
        else
            sink_.malformed(static_cast<uint32_t>(file), note.line, note.reason);
    }
}

void ParseAhead::pause(size_t file)
{
    if (workers_.empty())
        return;
    Place &place = places_[file];
    // A batch read to its last event goes back now rather than at the
    // file's next call, which reports the lines after that event (kept in
    // place.notes): a batch holds what one top-up takes (BatchedLogReader::
    // events_wanted()), and would otherwise wait a whole round.
    if (place.batch && place.next_event == place.batch->events.size())
        recycle(std::move(place.batch));
    if (!place.claimed)
        return;
    place.claimed = false;
    release(file, place.ended);
}

std::unique_ptr<ParseAhead::Batch> ParseAhead::claim(size_t file)
{
    std::unique_lock<std::mutex> lock(mutex_);
    switch (state_[file]) {
    case State::idle:
        // The cursor has not come to this file in this round: ahead of the
        // reader is after it.
        --idle_;
        state_[file] = State::claimed;
        cursor_ = (file + 1) % state_.size();
        queue_jobs();
        return nullptr;
    case State::queued:
        jobs_.erase(std::find(jobs_.begin(), jobs_.end(), file));
        state_[file] = State::claimed;
        queue_jobs(); // its batch goes to the next file
        return nullptr;
    case State::parsing:
        awaited_ = file;
        batch_parsed_.wait(lock, [&] { return state_[file] == State::ready; });
        awaited_ = SIZE_MAX;
        break;
    case State::ready: break;
    case State::claimed:
    case State::ended: return nullptr; // the caller's already, or nothing more to read
    }
    state_[file] = State::claimed;
    std::unique_ptr<Batch> batch = std::move(ready_[file]);
    if (batch->failure)
        std::rethrow_exception(batch->failure);
    return batch;
}

void ParseAhead::release(size_t file, bool ended)
{
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_[file] != State::claimed)
        return;
    state_[file] = ended ? State::ended : State::idle;
    idle_ += !ended;
    queue_jobs();
}

void ParseAhead::recycle(std::unique_ptr<Batch> batch)
{
    batch->clear(); // its events' strings are freed outside the lock
    std::lock_guard<std::mutex> lock(mutex_);
    spares_.push_back(std::move(batch));
    queue_jobs();
}

// ---- the workers ---------------------------------------------------------

void ParseAhead::start(size_t workers, size_t max_batches)
{
    state_.assign(files_.size(), State::idle);
    ready_.resize(files_.size());
    for (size_t file = 0; file < files_.size(); ++file)
        if (!files_.reader(file))
            state_[file] = State::ended; // it did not open
    idle_ = static_cast<size_t>(std::count(state_.begin(), state_.end(), State::idle));
    for (size_t i = 0; i < std::max<size_t>(max_batches, 1); ++i)
        spares_.push_back(std::make_unique<Batch>());
    queue_jobs();
    try {
        for (size_t i = 0; i < workers; ++i) {
            workers_.push_back(std::make_unique<Worker>());
            Worker &worker = *workers_.back();
            worker.thread = std::thread([this, &worker] { work(worker); });
        }
    } catch (...) {
        stop(); // the threads already started
        throw;
    }
}

void ParseAhead::stop()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    job_queued_.notify_all();
    for (auto &worker : workers_)
        if (worker->thread.joinable())
            worker->thread.join();
}

void ParseAhead::work(Worker &worker)
{
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        job_queued_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (stopping_)
            return;
        size_t file = jobs_.back();
        jobs_.pop_back();
        std::unique_ptr<Batch> batch = std::move(spares_.back());
        spares_.pop_back();
        state_[file] = State::parsing;
        lock.unlock();
        parse(file, *batch, worker);
        lock.lock();
        ready_[file] = std::move(batch);
        state_[file] = State::ready;
        if (awaited_ == file)
            batch_parsed_.notify_one();
    }
}

void ParseAhead::parse(size_t file, Batch &batch, Worker &worker) noexcept
{
    try {
        batch.read(*files_.reader(file), worker.parser, batch_size_(file));
    } catch (...) {
        batch.failure = std::current_exception(); // for claim() to rethrow
    }
}

// Under mutex_. The cursor goes on from where it is to the next idle
// files, one job each, while a batch is left for one.
void ParseAhead::queue_jobs()
{
    size_t queued = 0;
    while (idle_ > 0 && spares_.size() > jobs_.size()) {
        size_t file = cursor_;
        cursor_ = (cursor_ + 1) % state_.size();
        if (state_[file] != State::idle)
            continue;
        state_[file] = State::queued;
        --idle_;
        jobs_.push_back(file);
        ++queued;
    }
    if (queued == 1)
        job_queued_.notify_one();
    else if (queued > 1)
        job_queued_.notify_all();
}

// ---- a batch -------------------------------------------------------------

namespace {

// The sink of a batch's reader: notes each line with its place.
template <typename Note> class NoteTaker final : public MalformedLineSink {
public:
    explicit NoteTaker(std::vector<Note> &notes) : notes_(notes) {}

    void malformed(uint32_t, uint64_t line, const std::string &reason) override
    {
        notes_.push_back({events_before, line, false, reason});
    }
    void unfinished_last_line(uint32_t, uint64_t line) override
    {
        notes_.push_back({events_before, line, true, {}});
    }

    size_t events_before = 0;

private:
    std::vector<Note> &notes_;
};

} // namespace

void ParseAhead::Batch::read(LogFileReader &reader, LineParser &parser, size_t count)
{
    NoteTaker<Note> taker(notes);
    size_t goal = events.size() + count;
    events.reserve(goal); // not twice what it needs, as doubling would
    where.reserve(goal);
    while (events.size() < goal) {
        taker.events_before = events.size();
        // Parsed in place: an event is a few hundred bytes.
        LogEvent &event = events.emplace_back();
        SourceLocation &place = where.emplace_back();
        if (!reader.next(event, place, parser, taker)) {
            events.pop_back();
            where.pop_back();
            ended = true;
            return;
        }
    }
}

void ParseAhead::Batch::clear()
{
    events.clear();
    where.clear();
    notes.clear();
    ended = false;
    failure = nullptr;
}

} // namespace gdrhook::cli
