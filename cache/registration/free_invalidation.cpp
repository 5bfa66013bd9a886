// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/registration/free_invalidation.h"

#include "cache/events/event_pipeline.h"
#include "cache/registration/registration_cache.h"

namespace gdrhook {

void unpin_freed(RegistrationCache &cache, EventPipeline &pipeline)
{
    cache.unpin_retired();
    pipeline.poke();
}

void invalidate_freed(uint64_t addr, uint64_t size)
{
    if (RegistrationCache *cache = existing_process_cache(); cache && cache->invalidate(addr, size))
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
        cache && cache->invalidate(addr, size, clock))
        unpin_freed(*cache, *hot_line.pipeline);
}

void unpin_invalidated_now()
{
    if (RegistrationCache *cache = existing_process_cache(); cache && cache->has_retired())
        hot_line.pipeline->run_batch_hook_now();
}

} // namespace gdrhook
