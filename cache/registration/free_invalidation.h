// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A free as the process's registration cache hears of it, from the
// recorder (cache/record/recorder.cpp), around the real free:
//
//   invalidate_freed()           before it: no lookup finds the range now
//   real free
//   pin_clock_after_free()       read as soon as it returned
//   invalidate_after_free()      a lookup racing the free may have pinned
//                                the old memory meanwhile; pins started
//                                after the clock was read are of new
//                                memory and stay
//
// Then the worker unpins what left the cache (unpinner.h). Lock-free when
// nothing cached overlaps the range.
#pragma once

#include "cache/prim/hot_line.h"
#include "cache/prim/hot_path.h"

#include <atomic>
#include <cstdint>

namespace gdrhook {

class RegistrationCache;

// The process's cache if it exists already; never creates it.
inline RegistrationCache *existing_process_cache()
{
    return hot_line.cache.load(std::memory_order_acquire);
}

// [addr, addr + size) is being freed (size 0: the allocation that contains
// addr).
GDRHOOK_HOT void invalidate_freed(uint64_t addr, uint64_t size);
GDRHOOK_HOT uint64_t pin_clock_after_free();
GDRHOOK_HOT void invalidate_after_free(uint64_t addr, uint64_t size, uint64_t clock);

// Memory goes back to the system now (a pool's trim or destroy, a
// context's teardown): what left the cache is unpinned on this thread
// first, rather than by the worker soon after. The driver keeps freed
// memory that an open dma-buf exports allocated until the fd is closed,
// and the program would find it still in use when the call returned.
// Frees of single allocations leave the unpin to the worker (their cost
// is the application's); these calls are rare and slow already.
void unpin_invalidated_now();

} // namespace gdrhook
