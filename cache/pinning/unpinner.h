// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The worker's side of the registration cache: between two batches of
// events it takes the backend's revocations, unpins every retired
// registration nobody holds, and logs `revoke` and `unpin` events, each
// only once the `pin` it releases is in the log. An `unpin` carries the
// time its release began (a free's, on the freeing thread) and is written
// before the queued events stamped after that.
#pragma once

#include "cache/events/event.h"

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

namespace gdrhook {

class EventPipeline;
class RegistrationCache;
struct UnpinRecord;

class Unpinner {
public:
    // `cache` is where the process's cache appears once created (it is
    // created on first need, after the worker may have started).
    Unpinner(EventPipeline &pipeline, const std::atomic<RegistrationCache *> &cache);

    // The pipeline's batch hook: revocations, unpins, their events.
    void run_batch();
    // The pipeline's per-event handler: remembers each `pin` as written.
    void note_written(Event &event);

    // In a forked child: its log will restate, as `pin` (reason
    // "inherited"), every registration the parent had logged as pinned and
    // not yet released, before the child releases its copies.
    void note_fork_in_child();

    // Starts a thread that wakes the worker when the backend's revocation
    // fd becomes readable (the kmod backend's).
    void watch_revocations(int fd);

private:
    void log_inherited_pins();
    // Those stamped before `before` (an event's time_key; UINT64_MAX: all).
    void write_releases_whose_pin_is_logged(uint64_t before);
    // An unpin the cache reports, as its event, into waiting_.
    void take_release(const UnpinRecord &record);

    EventPipeline &pipeline_;
    const std::atomic<RegistrationCache *> &cache_;
    const std::function<void(const UnpinRecord &)> take_release_; // take_release()
    // The consumer lock guards all of this. A pin's event travels through
    // the queue, but its unpin is done, and logged, here, between batches,
    // possibly before the queue delivered the pin: releases wait until
    // their pin is logged, so the log shows a pin before its release.
    std::unordered_map<uint64_t, Event> pins_logged_; // entry id -> its pin event
    std::deque<Event> waiting_;                       // revoke/unpin events, as taken
    std::vector<uint64_t> revoked_handles_;
    bool inherited_unlogged_ = false; // a forked child has not restated them yet
};

} // namespace gdrhook
