// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Who hears of an allocation. The recorder (cache/record/) knows when
// memory was allocated and tells these functions; it does not know who
// listens. The runtime subscribes the listeners once, at start, in the
// order of one table (cache/core/subscriber_order.cpp): the UCX bridge
// (cache/ucx/ucx_bridge.h) before pin-on-alloc (cache/pinning/pin_events.h),
// the reverse of a free's (notify/free_subscribers.h): gdrhook's pin of a
// range is nested inside UCX's knowledge of it. UCX hears of the memory
// before gdrhook pins it, and of its free after gdrhook unpinned it; UCX
// hears at once, not after a pin's driver calls (an export, the module's
// ioctl: tens of microseconds) nor only when they succeed.
//
// tell_after_alloc() runs after the real allocation succeeded, once the
// allocation is tracked and its `alloc` event queued: a `pin` follows its
// `alloc` in the log, and a free made from inside a listener (UCX's
// handlers may call CUDA) finds the allocation tracked.
//
// The hot path pays one load of the hot line and one branch while nobody
// listens: a subscriber listens from the moment it has something to do
// (pin-on-alloc under GDRHOOK_PIN=alloc, UCX once libucm was found;
// start_listening_to_allocations()).
#pragma once

#include "cache/events/event.h"
#include "cache/prim/hot_line.h"
#include "cache/prim/hot_path.h"

#include <cstdint>

namespace gdrhook {

// What one listener does; a null step is skipped. Called on the
// allocating thread, inside the program's call.
struct AllocSubscriber {
    const char *name;
    // [addr, addr + size) of `kind` was allocated on `dev` by `api`.
    void (*after_alloc)(const char *api, Via via, MemoryKind kind, int32_t dev, uint64_t addr,
                        uint64_t size);
    // The hook's slow paths (a dlsym of a CUDA name): libraries may have
    // been loaded since the last call. Called listening or not, for a
    // subscriber that waits for a library before it listens (UCX's libucm).
    void (*libraries_may_have_loaded)();
};

// Few and fixed: one bit each on the hot line (hot_line.alloc_listeners),
// in the registry alloc_subscribers.cpp keeps (notify/subscriber_registry.h).
constexpr int max_alloc_subscribers = 8;

// A subscriber's place in the order.
using AllocSubscription = int;

// The runtime's, at start (and a test's): the next place in the order, or
// -1 when all are taken. It hears nothing until it starts listening
// (notify/subscriber_registry.h: from any thread).
AllocSubscription subscribe_to_allocations(const AllocSubscriber &subscriber);
void start_listening_to_allocations(AllocSubscription subscription);
const AllocSubscriber *alloc_subscriber(AllocSubscription subscription);

// The hot path's one test before tell_after_alloc().
// A gate only: the walk loads the byte again, with the acquire that orders
// the entries it reads.
inline bool anyone_listens_to_allocations()
{
    return GDRHOOK_UNLIKELY(hot_line.alloc_listeners.load(std::memory_order_acquire) != 0);
}

GDRHOOK_HOT void tell_after_alloc(const char *api, Via via, MemoryKind kind, int32_t dev,
                                  uint64_t addr, uint64_t size);
void tell_libraries_may_have_loaded();

} // namespace gdrhook
