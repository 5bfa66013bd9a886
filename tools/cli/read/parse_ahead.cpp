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

ParseAhead::ParseAhead(LogFileSet &files, size_t workers, size_t max_batches, BatchSize batch_size)
    : files_(files), batch_size_(std::move(batch_size)), state_(files.size(), State::idle),
      ready_(files.size())
{
    for (size_t file = 0; file < files.size(); ++file)
        if (!files.reader(file))
            state_[file] = State::ended; // it did not open
    idle_ = static_cast<size_t>(std::count(state_.begin(), state_.end(), State::idle));
    for (size_t i = 0; i < std::max<size_t>(max_batches, 1); ++i)
        spares_.push_back(std::make_unique<ParsedBatch>());
    queue_jobs();
    try {
        for (size_t i = 0; i < std::max<size_t>(workers, 1); ++i) {
            workers_.push_back(std::make_unique<Worker>());
            Worker &worker = *workers_.back();
            worker.thread = std::thread([this, &worker] { work(worker); });
        }
    } catch (...) {
        stop(); // the threads already started
        throw;
    }
}

ParseAhead::~ParseAhead()
{
    stop();
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
        std::unique_ptr<ParsedBatch> batch = std::move(spares_.back());
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

void ParseAhead::parse(size_t file, ParsedBatch &batch, Worker &worker) noexcept
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

std::unique_ptr<ParsedBatch> ParseAhead::claim(size_t file)
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
    case State::ready:
        break;
    case State::claimed:
    case State::ended:
        return nullptr; // the caller's already, or nothing more to read
    }
    state_[file] = State::claimed;
    std::unique_ptr<ParsedBatch> batch = std::move(ready_[file]);
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

void ParseAhead::recycle(std::unique_ptr<ParsedBatch> batch)
{
    batch->clear(); // its events' strings are freed outside the lock
    std::lock_guard<std::mutex> lock(mutex_);
    spares_.push_back(std::move(batch));
    queue_jobs();
}

} // namespace gdrhook::cli
