// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// From the application's threads to the log: events go into a bounded
// lock-free queue and a worker thread drains it in batches. The worker is
// started on the first event, sleeps on a futex when the queue is empty and
// is woken by the push that finds it asleep (or, with GDRHOOK_SAMPLE_MS, by
// the futex's timeout when the next sample is due).
//
// The consumer role is exclusive: whoever drains (the worker, or a producer
// that found the queue full, or the exit handler) holds consumer_lock_.
// A producer that finds the queue full drains it itself and then handles
// its own event, so nothing is lost and the log stays in order.
#pragma once

#include "cache/events/event.h"
#include "cache/events/event_log.h"
#include "cache/events/event_queue.h"
#include "cache/events/queued_event.h"
#include "cache/prim/asymmetric_fence.h"
#include "cache/prim/hot_path.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace gdrhook {

struct PipelineStats {
    uint64_t pushed = 0;     // handed to the worker (written - overflowed)
    uint64_t overflowed = 0; // the producer did the work itself
    uint64_t written = 0;    // lines handed to the log
    uint64_t wakeups = 0;    // futex wakes issued by producers
    // Events that neither reached the log nor stay in the journal (the
    // log's writes failed and the queue was full of unwritten events).
    uint64_t lost = 0;
};

class EventPipeline {
public:
    // Called by the consumer for every event, in order, before it is logged
    // (the unpinner notes pins here, and writes the unpins that happened
    // before the event ahead of it). May be empty.
    using EventHandler = std::function<void(Event &)>;

    // `cells_memory`: where the queue's cells live (the journal's mapping,
    // journal.h), or nullptr for ordinary memory.
    EventPipeline(size_t capacity, EventLog &log, int pid, void *cells_memory = nullptr);

    // Bytes of one queue cell (the journal's layout must match).
    static constexpr size_t queue_cell_bytes = BoundedMpscQueue<QueuedEvent>::cell_size;
    ~EventPipeline();

    EventPipeline(const EventPipeline &) = delete;
    EventPipeline &operator=(const EventPipeline &) = delete;

    void set_handler(EventHandler handler) { handler_ = std::move(handler); }

    // Called by the consumer after each batch it took from the queue, and
    // after poke(): the cache's eager unpin runs here, once per batch, and
    // logs what it did with write_from_consumer(). Set it before the first
    // submit. May be empty.
    using BatchHook = std::function<void()>;
    void set_batch_hook(BatchHook hook) { batch_hook_ = std::move(hook); }

    // Called by the worker, and only by it, once every `interval_ns` while
    // it runs (the first time as it starts, with the first event), under
    // the consumer lock: it measures and logs a `sample` with
    // write_from_consumer(). Producers never run it, and a worker with
    // nothing to do sleeps until the next one is due. Set it before the
    // first submit; interval 0 or an empty hook: no samples.
    using SampleHook = std::function<void()>;
    void set_sample_hook(uint64_t interval_ns, SampleHook hook)
    {
        sample_interval_ns_ = interval_ns;
        sample_hook_ = std::move(hook);
    }

    // Any thread: have the consumer run the batch hook soon even if no
    // event arrives (an eviction or a revocation left work for it).
    void poke();

    // Whether an event may wait in the queue (a hint: producers run on).
    bool may_hold_events() const { return queue_.maybe_nonempty(); }

    // Only from inside the handler, the batch hook or the sample hook: logs
    // an event the consumer itself produced (unpin, revoke, sample). Its
    // seq is that of the last event written from the queue, so it sorts
    // right after what caused it (a sample: after what it has seen).
    void write_from_consumer(Event &event);

    // The seq of the last event taken from the queue; after shutdown().
    uint64_t last_seq() const { return last_seq_; }

    // Any thread. Assigns the event's sequence number (its position in the
    // queue: every event goes through it). Never blocks on the worker
    // unless the queue is full.
    void submit(const Event &event);

    // The same for an event already in its queued form (the recorder's
    // allocations and frees): inline, the queue push and nothing else
    // while the worker runs and the queue has room.
    void submit(const QueuedEvent &queued)
    {
        if (GDRHOOK_LIKELY(!flags().stopped.load(std::memory_order_acquire) &&
                           flags().worker_running.load(std::memory_order_acquire)) &&
            push_for_worker(queued))
            return;
        submit_beyond_queue(queued);
    }

    // Writes everything queued so far, on the calling thread.
    void drain_now();
    // The same, and runs the batch hook (what poke() asks of the worker)
    // on the calling thread before it returns.
    void run_batch_hook_now();

    // Stops the worker after it has written everything; later submits are
    // handled on the submitting thread. Idempotent.
    void shutdown();

    // The process ends on the calling thread and nothing runs after us
    // (_exit, _Exit, exec); shutdown() follows and writes what is queued.
    // From now on other threads' events wait for the process to be gone
    // instead of being written (the worker's drain is not held back). The
    // kernel stops a thread in the middle of a write() at a page boundary,
    // which would leave a torn line at the log's end; the calls those
    // events come from had not returned when the process ended. The
    // calling thread itself goes on writing. A wait that lasts
    // `ending_wait_ns` means the process did not end after all: the gate
    // opens for good, with a warning.
    void close_for_process_end();
    // The exec failed and the process goes on: the waiting threads write.
    void reopen_after_failed_exec();
    void set_ending_wait_ns(uint64_t ns) { ending_wait_ns_ = ns; }

    // fork() support: prepare holds the consumer lock so that no thread is
    // inside the log at the fork; the child forgets the parent's queued
    // events (the parent logs them) and its worker, and starts its own on
    // its next event.
    void before_fork();
    void after_fork_in_parent();
    void after_fork_in_child(int child_pid);

    PipelineStats stats() const;
    size_t capacity() const { return queue_.capacity(); }

private:
    void ensure_worker();
    void worker_main();
    size_t drain_locked(); // consumer_lock_ held
    // After a drain: the lines reach the file, then the cells are freed.
    void write_out_then_release_locked();
    // The same; false when the write failed and nothing was freed.
    bool released_after_write_locked();
    void handle_locked(Event &event);
    // Into the queue for the running worker; false if the queue is full.
    bool push_for_worker(const QueuedEvent &queued)
    {
        if (!queue_.try_push(queued))
            return false;
        publish_then_check_sleeper();
        // Shutdown may have drained the queue just before our push.
        if (GDRHOOK_UNLIKELY(flags().stopped.load(std::memory_order_acquire)))
            drain_now();
        return true;
    }

    // No worker yet, queue full, stopped: the slow way.
    void submit_beyond_queue(const QueuedEvent &queued);
    void submit_on_this_thread(const Event &event, bool compact, QueuedEvent queued);
    // consumer_lock_, taken once no process end holds other threads back.
    std::unique_lock<std::mutex> lock_as_consumer();
    void wake_worker();
    void announce_sleep();

    // The sleep protocol is a Dekker pairing: the worker publishes "sleeping"
    // and then looks at the queue; a producer publishes its item and then looks
    // at "sleeping". A full fence on both sides makes sure one of them sees the
    // other. The producer's fence waits for its store to the queue cell, which
    // usually misses the cache (the worker read that cell last), and was half
    // of the shim's cost per event. With membarrier(2), the worker forces that
    // fence onto every running thread of the process on the rare occasions it
    // goes to sleep, and producers need only stop the compiler from reordering.
    void publish_then_check_sleeper()
    {
        flags().sleep_fence.light();
        // Only the first producer to find the worker asleep wakes it.
        if (flags().worker_sleeping.load(std::memory_order_relaxed) &&
            flags().worker_sleeping.exchange(0, std::memory_order_relaxed))
            wake_worker();
    }

    // Members are grouped by who writes them, each group on its own cache
    // lines: a producer's push should touch the queue cell it fills and
    // lines nobody else writes, nothing the worker writes per event.

    // Read on every submit; written at start, stop and fork, and by the
    // sleep protocol when the worker falls asleep (after lingering idle,
    // so not while events flow) or is woken. Kept on the queue's line that
    // a push writes (event_queue.h).
    struct ProducerFlags {
        std::atomic<bool> worker_running{false};
        std::atomic<bool> stopped{false};
        // The rarely-sleeping worker pays for the full fence of the sleep
        // protocol instead of every producer (publish_then_check_sleeper()).
        AsymmetricFence sleep_fence;
        std::atomic<uint32_t> worker_sleeping{0};
    };
    ProducerFlags &flags() { return queue_.producer_shared(); }
    const ProducerFlags &flags() const { return queue_.producer_shared(); }

    BoundedMpscQueue<QueuedEvent, ProducerFlags> queue_; // cache-line aligned and padded inside

    // The worker's and the wakers'.
    alignas(cache_line_size) std::atomic<bool> stopping_{false};
    std::atomic<uint32_t> wake_word_{0};

    // Read by the consumer only, or rarely.
    alignas(cache_line_size) std::atomic<uint64_t> wakeups_{0};
    std::atomic<uint64_t> overflowed_{0};
    std::atomic<uint64_t> lost_{0};
    bool said_write_failed_ = false; // consumer_lock_
    std::atomic<bool> poked_{false};
    EventLog &log_;
    int pid_;
    const bool journaled_; // the queue's cells live in the journal
    EventHandler handler_;
    BatchHook batch_hook_;
    SampleHook sample_hook_;
    uint64_t sample_interval_ns_ = 0;

    // The consumer's: written on every drain.
    alignas(cache_line_size) std::mutex consumer_lock_;
    std::atomic<uint64_t> written_{0};
    uint64_t last_seq_ = 0;
    // An event too big for a queue cell, while its placeholder is queued.
    const Event *whole_event_ = nullptr;
    // The thread the process ends on (close_for_process_end()), 0 while it
    // goes on; the others wait on ending_word_.
    long ending_thread_ = 0;
    std::atomic<uint32_t> ending_word_{0};
    uint64_t ending_wait_ns_ = 1000ull * 1000 * 1000;

    alignas(cache_line_size) std::mutex worker_start_lock_;
    std::thread worker_;
};

} // namespace gdrhook
