// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/registration/free_invalidation.h"

#include "cache/events/event_pipeline.h"
#include "cache/registration/registration_cache.h"

namespace gdrhook {

void invalidate_freed(uint64_t addr, uint64_t size)
{
    // A pinned range was freed: have the worker unpin it now rather than
    // when it next looks at the queue (prompt release, docs/design.md).
    if (RegistrationCache *cache = existing_process_cache(); cache && cache->invalidate(addr, size))
        hot_line.pipeline->poke();
}

uint64_t pin_clock_after_free()
{
    RegistrationCache *cache = existing_process_cache();
    return cache ? cache->pin_clock() : 0;
}

void invalidate_after_free(uint64_t addr, uint64_t size, uint64_t clock)
{
    if (RegistrationCache *cache = existing_process_cache();
        cache && cache->invalidate(addr, size, clock))
        hot_line.pipeline->poke();
}

void unpin_invalidated_now()
{
    if (RegistrationCache *cache = existing_process_cache(); cache && cache->has_retired())
        hot_line.pipeline->run_batch_hook_now();
}

} // namespace gdrhook
