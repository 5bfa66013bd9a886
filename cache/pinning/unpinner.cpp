// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/pinning/unpinner.h"

#include "cache/base/diagnostics.h"
#include "cache/events/event_clock.h"
#include "cache/events/event_pipeline.h"
#include "cache/events/thread_state.h"
#include "cache/pinning/pin_events.h"
#include "cache/registration/registration_cache.h"

#include <cerrno>
#include <chrono>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <thread>

namespace gdrhook {

namespace {

// An event's time in the unit all of the process's events carry (the TSC
// or ns: event_clock.h), for comparing two of them.
uint64_t time_key(const Event &event)
{
    return event.tsc ? event.tsc : event.ts_ns;
}

} // namespace

Unpinner::Unpinner(EventPipeline &pipeline, const std::atomic<RegistrationCache *> &cache)
    : pipeline_(pipeline), cache_(cache),
      take_release_([this](const UnpinRecord &record) { take_release(record); })
{}

void Unpinner::note_written(Event &event)
{
    if (inherited_unlogged_) // the child's first event: restate them before it
        log_inherited_pins();
    // A free unpins on its own thread and its event comes later; the
    // events queued meanwhile (the next allocation) happened after the
    // unpin: it is written before them, in the order of time.
    if (RegistrationCache *cache = cache_.load(std::memory_order_acquire))
        cache->report_unpins(take_release_);
    if (!waiting_.empty())
        write_releases_whose_pin_is_logged(time_key(event));
    if (event.kind == EventKind::pin)
        pins_logged_.emplace(event.entry_id, event);
}

void Unpinner::take_release(const UnpinRecord &record)
{
    // A pin discarded before anyone saw it (its memory was freed while it
    // ran) was never logged as `pin`.
    if (record.reason == UnpinReason::stale)
        return;
    Event event = worker_event(EventKind::unpin, record.addr, record.length, record.entry_id);
    // When the release began, whenever this line is written.
    set_time_from_queued(event, record.started);
    event.lat_ns = record.lat_ns;
    event.reason = to_string(record.reason);
    event.rc = record.status.ok() ? 0 : record.status.detail;
    event.msg = record.status.ok() ? nullptr : record.status.what;
    waiting_.push_back(event);
}

void Unpinner::run_batch()
{
    RegistrationCache *cache = cache_.load(std::memory_order_acquire);
    if (!cache)
        return;
    if (inherited_unlogged_) // a child that logged nothing else, at its exit
        log_inherited_pins();

    revoked_handles_.clear();
    if (cache->backend().take_revocations(revoked_handles_)) {
        for (const Registration &reg : cache->revoke(revoked_handles_))
            waiting_.push_back(worker_event(EventKind::revoke, reg.base, reg.length, reg.id));
    }
    if (cache->has_retired())
        cache->drain_unpins(take_release_);
    if (!waiting_.empty())
        write_releases_whose_pin_is_logged(UINT64_MAX);
}

void Unpinner::note_fork_in_child()
{
    inherited_unlogged_ = !pins_logged_.empty();
}

// The child holds its own copy of every registration the parent had logged
// as pinned and not yet released, and will release those copies and log
// the unpins: its log restates their pins first, so that it reads on its
// own (`gdrhook log check` pairs each unpin with a pin of the same
// process). Written before the child's first event or at its exit, not at
// the fork: a child that only execs another program leaves no log, and the
// exec closes its copies of the dma-buf fds (they are close-on-exec).
void Unpinner::log_inherited_pins()
{
    inherited_unlogged_ = false;
    for (auto &[entry_id, pin] : pins_logged_) {
        Event event = pin;
        stamp_now(event);
        event.tid = current_tid();
        event.reason = "inherited";
        pin = event;
        pipeline_.write_from_consumer(event);
    }
}

void Unpinner::write_releases_whose_pin_is_logged(uint64_t before)
{
    // waiting_ is in the order the releases were taken, which is that of
    // their times (a revoke's aside): only its front is stamped before
    // `before`. A worker behind a fast program holds the unpins of many
    // frees whose pins it has not yet written, and looks at them for
    // every event it writes: only at those it writes now.
    auto due_end = waiting_.begin();
    while (due_end != waiting_.end() && time_key(*due_end) < before)
        ++due_end;
    auto still_waiting = waiting_.begin();
    for (auto release = waiting_.begin(); release != due_end; ++release) {
        auto pin = pins_logged_.find(release->entry_id);
        if (pin == pins_logged_.end()) {
            *still_waiting++ = *release;
            continue;
        }
        if (release->kind == EventKind::unpin)
            pins_logged_.erase(pin);
        pipeline_.write_from_consumer(*release);
    }
    waiting_.erase(still_waiting, due_end); // a deque: moves the front, not the rest
}

// Revocations arrive on the module's fd while the worker may sleep on its
// futex: this thread waits in poll() and pokes the worker.
void Unpinner::watch_revocations(int fd)
{
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    try {
        EventPipeline *pipeline = &pipeline_;
        std::thread([fd, pipeline] {
            pthread_setname_np(pthread_self(), "gdrhook-revoke");
            for (;;) {
                pollfd p{fd, POLLIN, 0};
                int n = poll(&p, 1, -1);
                if (n < 0 && errno == EINTR)
                    continue;
                if (n < 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL)))
                    return;
                pipeline->poke();
                // The worker reads the events; give it the chance before
                // polling the (level-triggered) fd again.
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        }).detach();
    } catch (const std::exception &error) {
        diagnostics().warn("cannot watch for revocations ({}); they are read after "
                           "the next free",
                           error.what());
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

} // namespace gdrhook
