// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A free as the process's registration cache hears of it, as the first
// subscriber of the free sequence (cache/notify/free_subscribers.h, which
// says why first), around the real free:
//
//   invalidate_freed()           before it: no lookup finds the range now
//   real free
//   pin_clock_after_free()       read as soon as it returned
//   invalidate_after_free()      a lookup racing the free may have pinned
//                                the old memory meanwhile; pins started
//                                after the clock was read are of new
//                                memory and stay
//
// What left the cache is unpinned by the thread that frees, before the
// real free where it can (a held registration waits for its put()); the
// worker logs the unpins (unpinner.h). Lock-free when nothing cached
// overlaps the range.
#pragma once

#include "cache/notify/free_subscribers.h"
#include "cache/prim/hot_line.h"
#include "cache/prim/hot_path.h"

#include <atomic>
#include <cstdint>

namespace gdrhook {

class EventPipeline;
class RegistrationCache;

// The process's cache if it exists already; never creates it.
inline RegistrationCache *existing_process_cache()
{
    return hot_line.cache.load(std::memory_order_acquire);
}

// The cache as a subscriber to frees: the steps below, for the kinds of
// memory it may hold. The runtime subscribes it first; it listens once the
// cache exists (core/process_cache.cpp).
FreeSubscriber registration_cache_free_subscriber();

// [addr, addr + size) is being freed (size 0: the allocation that contains
// addr).
GDRHOOK_HOT void invalidate_freed(uint64_t addr, uint64_t size);
GDRHOOK_HOT uint64_t pin_clock_after_free();
GDRHOOK_HOT void invalidate_after_free(uint64_t addr, uint64_t size, uint64_t clock);

// What the two above do once invalidate() dropped registrations of the
// freed range: unpin them on this thread, before the free returns (the
// driver keeps freed memory that an open dma-buf exports allocated until
// the fd is closed), and poke the worker, which logs the unpins. Public for
// tools/bench, which times this flow with a cache and pipeline of its own.
void unpin_freed(RegistrationCache &cache, EventPipeline &pipeline);

// Memory goes back to the system now (a pool's trim or destroy): whatever
// retired registrations are left (allocations freed while held and put
// since, which only the worker would unpin) are unpinned on this thread,
// and their unpins logged, before the call returns. The driver keeps freed
// memory that an open dma-buf exports allocated until the fd is closed,
// and the program would find it still in use when the call returned.
void unpin_invalidated_now();

} // namespace gdrhook
