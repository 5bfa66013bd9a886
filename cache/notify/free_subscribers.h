// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Who hears of a free. The recorder (cache/record/) knows when memory is
// freed and tells these functions; it does not know who listens. The
// runtime subscribes the listeners once, at start, before the hot line
// says the runtime runs, in the order of one table
// (cache/core/subscriber_order.cpp), and every walk below calls them in
// that order. The registration cache (cache/pinning/free_invalidation.h)
// comes first, the pointer table (cache/pointers/pointer_answers.h), the
// UCX bridge (cache/ucx/ucx_bridge.h) and any later one after it (a
// test's subscriber is later still). The cache comes first
// because it is the only one whose forgetting makes the range unfindable
// to every thread: once its before_free returned, no lookup, from any
// thread and from inside a later subscriber (UCX's handlers run arbitrary
// code, and may call gdrhook_get or free CUDA memory themselves), returns
// the registration of the memory being freed, and its memory is already
// unpinned. A later subscriber thus never sees the range still cached.
//
// The sequence around one free, each step for every listening subscriber:
//
//   tell_before_free()           before the real free: the address cannot
//                                come back from an allocation yet
//   real free
//   read_clocks_after_free()     as soon as it returned (the cache's pin
//                                clock: which pins started before it)
//   tell_after_free()            a lookup racing the free may have pinned
//                                the old memory meanwhile
//
// a context teardown: tell_before_context_teardown() for each of the
// context's allocations before the real call, then read_clocks_after_free()
// and tell_after_free() for each once it returned; a graph release (a trim,
// a graph's destruction): before_free and after_free for each range; a
// pool's trim or destroy: tell_pool_released() before the real call.
//
// The hot path pays one load of the hot line and one branch while nobody
// listens: a subscriber listens from the moment it has something to do
// (the cache once it exists, UCX once libucm was found; start_listening()).
#pragma once

#include "cache/events/event.h"
#include "cache/prim/hot_line.h"
#include "cache/prim/hot_path.h"

#include <array>
#include <cstdint>

namespace gdrhook {

// What one listener does at each step; a null step is skipped. Called on
// the freeing thread, inside the program's call.
struct FreeSubscriber {
    const char *name;
    // [addr, addr + size) of `kind` is about to be freed (size 0: the
    // allocation that contains addr).
    void (*before_free)(MemoryKind kind, uint64_t addr, uint64_t size);
    // One allocation of a context about to be torn down.
    void (*before_context_teardown)(MemoryKind kind, uint64_t addr, uint64_t size);
    // Read as soon as the real call returned; handed back to after_free.
    uint64_t (*clock_after_free)();
    // The real call freed [addr, addr + size).
    void (*after_free)(MemoryKind kind, uint64_t addr, uint64_t size, uint64_t clock);
    // A pool's trim or destroy is about to give memory back.
    void (*pool_released)();
};

// Few and fixed: one bit each on the hot line (hot_line.free_listeners),
// in the registry free_subscribers.cpp keeps (notify/subscriber_registry.h).
constexpr int max_free_subscribers = 8;

// A subscriber's place in the order.
using FreeSubscription = int;

// The runtime's, at start (and a test's): the next place in the order, or
// -1 when all are taken. It hears nothing until start_listening()
// (notify/subscriber_registry.h: from any thread).
FreeSubscription subscribe_to_frees(const FreeSubscriber &subscriber);
void start_listening(FreeSubscription subscription);
const FreeSubscriber *free_subscriber(FreeSubscription subscription);

// The hot path's one test before any walk below.
// A gate only: the walk loads the byte again, with the acquire that orders
// the entries it reads.
inline bool anyone_listens_to_frees()
{
    return GDRHOOK_UNLIKELY(hot_line.free_listeners.load(std::memory_order_acquire) != 0);
}

struct FreeClocks {
    std::array<uint64_t, max_free_subscribers> of{};
};

void tell_before_free(MemoryKind kind, uint64_t addr, uint64_t size);
void tell_before_context_teardown(MemoryKind kind, uint64_t addr, uint64_t size);
FreeClocks read_clocks_after_free();
void tell_after_free(MemoryKind kind, uint64_t addr, uint64_t size, const FreeClocks &clocks);
void tell_pool_released();

} // namespace gdrhook
