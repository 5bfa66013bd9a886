// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the hook calls around each intercepted CUDA entry point. The hook
// only forwards; this file decides what an allocation, a free or a context
// teardown means: which tracked allocations it ends, what the event says,
// and in which order things happen around the real call:
//
//   free:   begin_free (stamp, forget the allocation, tell who listens:
//           notify/free_subscribers.h)  ->  real free  ->  end_free (tell
//           them again; log with the real result; restore the allocation if
//           the driver refused the free)
//   alloc:  real alloc ->  record_alloc (track, log, tell who listens:
//           notify/alloc_subscribers.h)
#pragma once

#include "cache/base/driver_api.h"
#include "cache/events/event.h"
#include "cache/prim/hot_path.h"
#include "cache/record/alloc_tracker.h"

#include <cstdint>

namespace gdrhook {

// An allocation's or a free's event as the hot path records it: the fields
// such an event has, the time already in the queue's form (queued_event.h),
// so that it is built and queued without the detour through Event. No
// default values: the recorder sets every field, and defaults would cost a
// line of constants per call (hot_path.h).
struct RecordedEvent {
    uint64_t time; // queued_time_now()
    uint64_t addr;
    uint64_t size;
    const char *api;
    int32_t tid;
    int32_t dev;
    int32_t rc;
    EventKind kind;
    Via via;
    MemoryKind mem;
};

struct FreeTicket {
    RecordedEvent event;   // set when active
    Allocation allocation; // what the free ends, if it was tracked
    bool tracked = false;
    bool active = false; // false: pass-through, nothing to log
};

// A free of one allocation (or handle) of `kind`, at addr. size_hint is the
// size the API call names (cuMemUnmap, cuMemAddressFree), else 0.
GDRHOOK_HOT FreeTicket begin_free(const char *api, Via via, MemoryKind kind, uint64_t addr,
                                  uint64_t size_hint);
GDRHOOK_HOT void end_free(FreeTicket &ticket, int rc);

// A successful or failed allocation; addr is the pointer or handle made.
GDRHOOK_HOT void record_alloc(const char *api, Via via, MemoryKind kind, uint64_t addr,
                              uint64_t size, int rc);

// cuCtxDestroy and the primary-context teardowns: everything allocated in
// `context` ends. Returns the ticket to finish after the real call.
struct TeardownTicket {
    Event event;
    bool active = false;
};
TeardownTicket begin_context_teardown(const char *api, Via via, uint64_t context, int32_t dev);
// Ends with the teardown's registrations unpinned: its memory is back when
// the call returns (the registration cache's subscriber, free_invalidation.h).
void end_context_teardown(TeardownTicket &ticket, int rc);

// A pool's trim or destroy is about to give memory back: the subscribers
// hear of it first (the cache unpins, on this thread, what frees left
// pinned).
void before_pool_release();

// Primary contexts are reference counted by the driver; the hook mirrors the
// count so that the release that destroys one is treated as a teardown.
void note_primary_context_retained(int32_t dev, uint64_t context);
// A release about to run: `counted` when it took one of the references
// the hook counts, `destroys` the context when it took the last.
struct PrimaryRelease {
    bool counted = false;
    uint64_t destroys = 0;
};
PrimaryRelease begin_primary_context_release(int32_t dev);
// After the real release: one the driver refused gives its reference back.
void end_primary_context_release(int32_t dev, const PrimaryRelease &release, int rc);
uint64_t primary_context_of(int32_t dev);

// Runtime-API calls (cudaFree...) wrap driver calls the hook also sees. The
// runtime wrapper records a fallback event only when no driver-level event
// was recorded on this thread during its call.
uint64_t events_recorded_by_this_thread();

} // namespace gdrhook
