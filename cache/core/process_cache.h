// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The registration cache as the shim runs it inside an unmodified program:
// created on first need (a backend needs a driver with a context, so never
// at load time), told of every free before and after the real free runs,
// pinning new allocations under GDRHOOK_PIN=alloc, and unpinning eagerly
// from the event worker's batch hook, which also logs the `pin`, `unpin`
// and `revoke` events.
//
//   free:   invalidate (before the real free)  ->  real free  ->
//           invalidate again (a lookup racing the free may have pinned)  ->
//           the free event wakes the worker  ->  batch hook: unpin, log
//   alloc:  real alloc  ->  pin (policy alloc, size >= GDRHOOK_PIN_MIN_SIZE)
#pragma once

#include "cache/prim/hot_path.h"
#include "cache/record/alloc_tracker.h"
#include "cache/events/event.h"
#include "cache/prim/hot_line.h"

#include <atomic>
#include <cstdint>

namespace gdrhook {

class RegistrationCache;

// The process's cache, created on the first call; null when GDRHOOK_PIN=off,
// the shim is disabled, or creation failed (said once on stderr).
RegistrationCache *shim_cache();

// The cache if it exists already; never creates it (free paths).
inline RegistrationCache *existing_shim_cache()
{
    return hot_line.shim_cache.load(std::memory_order_acquire);
}

// The application frees [addr, addr + size) (size 0: the allocation that
// contains addr): before the real free, invalidate_freed(); after it
// returned successfully, invalidate_after_free() with the clock read by
// pin_clock_after_free() right after the real free. Lock-free when nothing
// cached overlaps.
GDRHOOK_HOT void invalidate_freed(uint64_t addr, uint64_t size);
GDRHOOK_HOT uint64_t pin_clock_after_free();
GDRHOOK_HOT void invalidate_after_free(uint64_t addr, uint64_t size, uint64_t clock);

// A successful allocation: pins it under GDRHOOK_PIN=alloc when it is
// device memory of at least GDRHOOK_PIN_MIN_SIZE. Never fails the
// allocation: a pin that fails is logged as an `error` event.
GDRHOOK_HOT void pin_new_allocation(const char *api, Via via, const Allocation &allocation);

// GDRHOOK_PIN=alloc, told by the runtime as it starts and kept with the
// hot globals (hot_path.h): every allocation asks.
void set_pin_on_alloc(bool on);

// The event worker's batch hook (EventPipeline::set_batch_hook) and its
// per-event handler (EventPipeline::set_handler).
void unpin_batch();
void note_logged_pin(Event &event);

// At exit: every registration is unpinned and logged (reason teardown)
// before the event log closes; then the statistics at info level.
void retire_shim_cache_at_exit();
void print_shim_cache_statistics();

// In a forked child, before anything else touches the cache.
void shim_cache_after_fork_in_child();

// In a forked child: its log will restate, as `pin` (reason "inherited"),
// every registration the parent had logged as pinned and not yet released,
// before the child releases its copies (see process_cache.cpp).
void note_fork_in_child();

} // namespace gdrhook
