// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/pinning/free_invalidation.h"

#include "cache/events/event_pipeline.h"
#include "cache/prim/profile.h"
#include "cache/registration/registration_cache.h"

namespace gdrhook {
namespace {

// The kinds whose address range the cache may hold: pinned host memory
// too, where the device exports it (pin_events.h); graph memory is a
// pool's.
bool cache_may_hold(MemoryKind kind)
{
    switch (kind) {
    case MemoryKind::device:
    case MemoryKind::pitch:
    case MemoryKind::pool:
    case MemoryKind::graph:
    case MemoryKind::managed:
    case MemoryKind::ipc:
    case MemoryKind::vmm_mapping:
    case MemoryKind::host:
    case MemoryKind::host_registered: return true;
    default: return false;
    }
}

void forget_before_free(MemoryKind kind, uint64_t addr, uint64_t size)
{
    if (cache_may_hold(kind))
        invalidate_freed(addr, size);
}

void forget_after_free(MemoryKind kind, uint64_t addr, uint64_t size, uint64_t clock)
{
    if (cache_may_hold(kind))
        invalidate_after_free(addr, size, clock);
}

} // namespace

FreeSubscriber registration_cache_free_subscriber()
{
    FreeSubscriber subscriber{};
    subscriber.name = "registration cache";
    subscriber.before_free = forget_before_free;
    // A teardown's allocations are forgotten after the call, when the
    // tracker has let them go (record/recorder.cpp).
    subscriber.before_context_teardown = nullptr;
    subscriber.clock_after_free = pin_clock_after_free;
    subscriber.after_free = forget_after_free;
    subscriber.pool_released = unpin_invalidated_now;
    return subscriber;
}

void unpin_freed(RegistrationCache &cache, EventPipeline &pipeline)
{
    ProfileTimer timed(ProfilePart::free_unpin);
    cache.unpin_retired();
    pipeline.poke();
}

void invalidate_freed(uint64_t addr, uint64_t size)
{
    RegistrationCache *cache = existing_process_cache();
    if (!cache)
        return;
    // Where this free removed nothing, another free of the address may
    // have retired the pin of this memory while its owner held it (a pin
    // that began before that free read its clock looks as old as the
    // freed memory); the owner put it back since, and this free is the
    // memory's own: it must not stay exported past it.
    if (cache->invalidate_to_unpin(addr, size) || cache->retired_waited_for_put())
        unpin_freed(*cache, *hot_line.pipeline);
}

uint64_t pin_clock_after_free()
{
    RegistrationCache *cache = existing_process_cache();
    return cache ? cache->pin_clock() : 0;
}

void invalidate_after_free(uint64_t addr, uint64_t size, uint64_t clock)
{
    if (RegistrationCache *cache = existing_process_cache();
        cache && cache->invalidate_to_unpin(addr, size, clock))
        unpin_freed(*cache, *hot_line.pipeline);
}

void unpin_invalidated_now()
{
    if (RegistrationCache *cache = existing_process_cache(); cache && cache->has_retired())
        hot_line.pipeline->run_batch_hook_now();
}

} // namespace gdrhook
