// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/event_pipeline.h"

#include "cache/base/clock.h"
#include "cache/base/diagnostics.h"
#include "cache/prim/futex.h"
#include "cache/prim/profile.h"

#include <cerrno>
#include <cstring>
#include <linux/membarrier.h>
#include <new>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gdrhook {
namespace {

constexpr size_t batch_size = 256;

// After the queue runs dry the worker lingers this long before it goes to
// sleep for good. While it lingers producers see it awake and never make a
// system call to wake it: in a program that allocates and frees steadily
// (tens of microseconds apart on a real GPU) the application's threads pay
// for a queue push only. An idle process still ends up in a plain futex
// sleep, and the wait from a free to its logging stays under this bound.
// Each time the worker looks at the queue it takes the next cell's line
// from the core that will write it; a longer linger means fewer such
// transfers per event (measured: 200 us cost the application more per
// alloc/free pair at a GPU's pace). Frees that unpin do not wait for it:
// they poke the worker (process_cache.cpp).
constexpr uint64_t linger_ns = 1000 * 1000;

} // namespace

static_assert(EventPipeline::queue_cell_bytes == 64, "the journal's cell (journal_layout.h)");

EventPipeline::EventPipeline(size_t capacity, EventLog &log, int pid, void *cells_memory)
    : queue_(capacity, cells_memory), log_(log), pid_(pid), journaled_(cells_memory != nullptr)
{}

EventPipeline::~EventPipeline()
{
    shutdown();
}

// The sleep protocol: see publish_then_check_sleeper() in event_pipeline.h.
void EventPipeline::announce_sleep()
{
    flags().worker_sleeping.store(1, std::memory_order_relaxed);
    flags().sleep_fence.heavy();
}

void EventPipeline::submit(const Event &event)
{
    QueuedEvent queued;
    if (pack(event, queued))
        submit(queued);
    else
        submit_on_this_thread(event, false, queued);
}

void EventPipeline::submit_beyond_queue(const QueuedEvent &queued)
{
    if (!flags().stopped.load(std::memory_order_acquire)) {
        ensure_worker();
        if (flags().worker_running.load(std::memory_order_acquire) && push_for_worker(queued))
            return;
    }
    submit_on_this_thread(Event{}, true, queued);
}

// Full queue, no worker (thread creation failed), after shutdown, or an
// event the compact form cannot hold: do the consumer's work here. The
// event goes through the queue all the same (whole events as a placeholder
// that the drain swaps back), behind everything already in it, so each
// thread's events stay in the order it recorded them. A slot claimed by a
// producer that has not yet published it holds the drain up for a few
// instructions.
void EventPipeline::submit_on_this_thread(const Event &event, bool compact, QueuedEvent queued)
{
    overflowed_.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock<std::mutex> lock = lock_as_consumer();
    if (!compact) {
        queued = placeholder();
        whole_event_ = &event;
    }
    for (;;) {
        size_t drained = drain_locked();
        if (queue_.try_push(queued))
            break;
        if (drained)
            continue;
        // Nothing to take: every cell holds an event whose line the log
        // could not take (a full file system), kept in the journal until
        // a write succeeds. If none does now, this event has no place:
        // counted, said at exit, never waited for.
        if (!released_after_write_locked()) {
            lost_.fetch_add(1, std::memory_order_relaxed);
            whole_event_ = nullptr;
            return;
        }
        std::this_thread::yield();
    }
    while (drain_locked() == batch_size) {
    }
    // The placeholder may sit behind a slot still being filled.
    while (whole_event_) {
        if (!drain_locked())
            std::this_thread::yield();
    }
    log_.flush();
}

void EventPipeline::wake_worker()
{
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    wake_word_.fetch_add(1, std::memory_order_release);
    futex_wake_all(wake_word_);
}

void EventPipeline::ensure_worker()
{
    if (flags().worker_running.load(std::memory_order_acquire))
        return;
    std::lock_guard<std::mutex> lock(worker_start_lock_);
    if (flags().worker_running.load(std::memory_order_relaxed) ||
        flags().stopped.load(std::memory_order_relaxed))
        return;

    // Without membarrier (kernels before 4.14, seccomp, ThreadSanitizer)
    // producers keep a full fence.
    flags().sleep_fence.enable();

    // The worker must not take signals meant for the application.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    try {
        worker_ = std::thread([this] { worker_main(); });
        flags().worker_running.store(true, std::memory_order_release);
    } catch (const std::exception &error) {
        // Without a worker every event is handled on its own thread.
        diagnostics().warn("cannot start the event worker ({}); events are "
                           "written synchronously",
                           error.what());
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

void EventPipeline::worker_main()
{
    pthread_setname_np(pthread_self(), "gdrhook-worker");
    const bool sampling = sample_hook_ && sample_interval_ns_;
    // The first sample as the worker starts (with the first event, which
    // may be logged just after it): the baseline the later ones are read
    // against.
    uint64_t next_sample_ns = sampling ? monotonic_ns() : UINT64_MAX;
    bool lingered = false;
    for (;;) {
        size_t drained;
        {
            std::lock_guard<std::mutex> lock(consumer_lock_);
            const uint64_t written = written_.load(std::memory_order_relaxed);
            drained = drain_locked();
            if (sampling && !stopping_.load(std::memory_order_relaxed)) {
                const uint64_t now = monotonic_ns();
                if (now >= next_sample_ns) {
                    sample_hook_();
                    // On the interval's grid; after a stall (a stopped or
                    // starved process) one sample, not a burst of them.
                    next_sample_ns += sample_interval_ns_;
                    if (next_sample_ns <= now)
                        next_sample_ns = now + sample_interval_ns_;
                }
            }
            // The batch hook may have logged unpins without any event.
            if (written_.load(std::memory_order_relaxed) != written)
                log_.flush();
        }
        if (drained) {
            lingered = false;
            continue;
        }
        if (stopping_.load(std::memory_order_acquire))
            return;

        uint32_t word = wake_word_.load(std::memory_order_acquire);
        // With samples, no wait lasts past the next one.
        uint64_t until_sample = 0; // 0: no limit
        if (sampling) {
            const uint64_t now = monotonic_ns();
            if (now >= next_sample_ns)
                continue;
            until_sample = next_sample_ns - now;
        }
        if (!lingered) {
            // Still "awake" for producers; a shutdown wakes us early. A
            // sample due first cuts the linger short; it starts again after.
            const bool sample_first = until_sample && until_sample < linger_ns;
            futex_wait(wake_word_, word, sample_first ? until_sample : linger_ns);
            lingered = !sample_first;
            continue;
        }
        announce_sleep();
        // A poke() that stored its flag after our drain looked at it bumps
        // wake_word_ after `word` was read, so the wait returns at once.
        bool timed_out = false;
        if (!queue_.maybe_nonempty() && !poked_.load(std::memory_order_acquire) &&
            !stopping_.load(std::memory_order_acquire))
            timed_out = futex_wait(wake_word_, word, until_sample);
        flags().worker_sleeping.store(0, std::memory_order_relaxed);
        // Woken by a producer: linger after its events. Woken by the clock
        // for a sample: nobody is producing; back to sleep after it.
        lingered = timed_out;
    }
}

size_t EventPipeline::drain_locked()
{
    size_t count = 0;
    QueuedEvent queued;
    size_t position;
    while (queue_.try_take(queued, position)) {
        if (is_placeholder(queued)) {
            Event whole = *whole_event_;
            whole_event_ = nullptr;
            whole.seq = position;
            handle_locked(whole);
        } else {
            Event event = unpack(queued, position);
            handle_locked(event);
        }
        if (++count == batch_size)
            break; // let the worker flush; producers that drain take it all
    }
    // exchange first: a poke() that lands while the hook runs is kept.
    bool poked =
        poked_.load(std::memory_order_relaxed) && poked_.exchange(false, std::memory_order_acq_rel);
    if (batch_hook_ && (count || poked))
        batch_hook_();
    if (count)
        write_out_then_release_locked();
    return count;
}

// A cell is freed only once its event's line has been handed to the
// kernel: until then the journal (journal.h) still holds the event, so a
// process killed between taking an event and writing it loses nothing.
// What was written and not yet released is told apart by the tool, from
// the log itself (tools/cli/log_recovery.cpp).
//
// A write that fails (a full file system) releases nothing: the events stay
// in the journal, where `gdrhook log recover` finds them, and their lines
// wait in the log's buffer for the next flush.
void EventPipeline::write_out_then_release_locked()
{
    released_after_write_locked();
}

bool EventPipeline::released_after_write_locked()
{
    if (!log_.flush()) {
        if (!said_write_failed_) {
            said_write_failed_ = true;
            diagnostics().error("cannot write the event log '{}': {}; its events {}", log_.path(),
                                strerror(log_.write_errno()),
                                journaled_ ? "stay in the journal until a write succeeds"
                                           : "wait in memory for room (there is no journal)");
        }
        return false;
    }
    queue_.release_taken();
    return true;
}

void EventPipeline::handle_locked(Event &event)
{
    ProfileTimer timed(ProfilePart::writer_event);
    // The handler may write the consumer's own lines before this event's:
    // they carry the seq of the event written before them.
    if (handler_)
        handler_(event);
    last_seq_ = event.seq;
    log_.write(event, pid_);
    written_.fetch_add(1, std::memory_order_relaxed);
}

void EventPipeline::write_from_consumer(Event &event)
{
    event.seq = last_seq_;
    log_.write(event, pid_);
    written_.fetch_add(1, std::memory_order_relaxed);
}

void EventPipeline::poke()
{
    poked_.store(true, std::memory_order_release);
    if (flags().stopped.load(std::memory_order_acquire) ||
        !flags().worker_running.load(std::memory_order_acquire)) {
        // No worker to do it: whoever drains next runs the hook. At exit
        // the exit handler drains last.
        return;
    }
    wake_worker();
}

void EventPipeline::drain_now()
{
    std::unique_lock<std::mutex> lock = lock_as_consumer();
    while (drain_locked() == batch_size) {
    }
    log_.flush();
}

void EventPipeline::run_batch_hook_now()
{
    // As poke() asks the worker; the drain runs the hook, or waits for the
    // worker that took the request to finish it.
    poked_.store(true, std::memory_order_release);
    drain_now();
}

std::unique_lock<std::mutex> EventPipeline::lock_as_consumer()
{
    std::unique_lock<std::mutex> lock(consumer_lock_);
    while (ending_thread_ && ending_thread_ != syscall(SYS_gettid)) {
        // Read under the lock: a reopen after we let go changes it, and
        // the wait then returns at once.
        const uint32_t word = ending_word_.load(std::memory_order_relaxed);
        lock.unlock();
        const bool timed_out = futex_wait(ending_word_, word, ending_wait_ns_);
        lock.lock();
        if (timed_out && ending_thread_) {
            ending_thread_ = 0;
            diagnostics().warn("the process did not end within {} ms of its end "
                               "call; other threads write their events again",
                               ending_wait_ns_ / 1000000);
        }
    }
    return lock;
}

void EventPipeline::close_for_process_end()
{
    std::lock_guard<std::mutex> lock(consumer_lock_);
    ending_thread_ = syscall(SYS_gettid);
}

void EventPipeline::reopen_after_failed_exec()
{
    {
        std::lock_guard<std::mutex> lock(consumer_lock_);
        ending_thread_ = 0;
        ending_word_.fetch_add(1, std::memory_order_relaxed);
    }
    futex_wake_all(ending_word_);
}

void EventPipeline::shutdown()
{
    {
        std::lock_guard<std::mutex> lock(worker_start_lock_);
        if (flags().stopped.exchange(true))
            return;
        stopping_.store(true, std::memory_order_release);
    }
    if (flags().worker_running.load(std::memory_order_acquire)) {
        wake_worker();
        if (worker_.joinable())
            worker_.join();
        flags().worker_running.store(false, std::memory_order_release);
    }
    drain_now();
}

void EventPipeline::before_fork()
{
    worker_start_lock_.lock();
    consumer_lock_.lock();
    // What was recorded before the fork is the parent's, and is written now:
    // the child's queue starts empty, and the child knows exactly which
    // pins its parent had logged (the ones it restates and releases).
    while (drain_locked() == batch_size) {
    }
    log_.flush();
}

void EventPipeline::after_fork_in_parent()
{
    consumer_lock_.unlock();
    worker_start_lock_.unlock();
}

void EventPipeline::after_fork_in_child(int child_pid)
{
    // The locks were taken by this thread in before_fork, but a fresh object
    // is the only portable way to get an unlocked mutex here.
    new (&consumer_lock_) std::mutex();
    new (&worker_start_lock_) std::mutex();
    // The worker thread does not exist in the child; forget its handle
    // without joining or destroying it.
    new (&worker_) std::thread();
    flags().worker_running.store(false, std::memory_order_relaxed);
    flags().worker_sleeping.store(0, std::memory_order_relaxed);
    queue_.reset();
    ending_thread_ = 0; // a thread of the parent's
    pid_ = child_pid;
}

PipelineStats EventPipeline::stats() const
{
    PipelineStats s;
    s.overflowed = overflowed_.load(std::memory_order_relaxed);
    s.written = written_.load(std::memory_order_relaxed);
    s.pushed = s.written >= s.overflowed ? s.written - s.overflowed : 0;
    s.wakeups = wakeups_.load(std::memory_order_relaxed);
    s.lost = lost_.load(std::memory_order_relaxed);
    return s;
}

} // namespace gdrhook
