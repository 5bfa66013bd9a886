// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/registration/pin_events.h"

#include "cache/events/event_clock.h"
#include "cache/events/event_pipeline.h"
#include "cache/prim/hot_line.h"
#include "cache/registration/registration_cache.h"

namespace gdrhook {
namespace {

const char *backend_name = "none";
uint64_t pin_min_size = 0;
RegistrationCache *(*cache_for_pins)() = nullptr;

// What caused the pin that on_pin reports: the allocation being pinned
// under GDRHOOK_PIN=alloc, else a library's gdrhook_get().
struct PinCause {
    const char *api = "gdrhook_get";
    Via via = Via::symbol;
    MemoryKind mem = MemoryKind::none;
    int32_t dev = -1;
};
GDRHOOK_THREAD_LOCAL PinCause pin_cause;

// An event of the cache's, stamped now on the calling thread.
Event cache_event(EventKind kind, const char *api, uint64_t addr, uint64_t size)
{
    Event event = make_event(kind, api, Via::symbol, MemoryKind::none, addr, size);
    event.backend = backend_name;
    return event;
}

} // namespace

void set_pin_event_backend(const char *name)
{
    backend_name = name;
}

Event worker_event(EventKind kind, uint64_t addr, uint64_t size, uint64_t handle)
{
    Event event = cache_event(kind, "gdrhook_worker", addr, size);
    event.handle = handle;
    return event;
}

void log_pin(const Registration &reg)
{
    Event event = cache_event(EventKind::pin, pin_cause.api, reg.base, reg.length);
    event.via = pin_cause.via;
    event.mem = pin_cause.mem;
    event.dev = pin_cause.dev;
    event.handle = reg.id;
    hot_line.pipeline->submit(event);
}

void log_stale_hit(uint64_t addr, uint64_t, uint64_t)
{
    Event event = cache_event(EventKind::error, pin_cause.api, addr, 0);
    event.msg = "verify: a cache hit disagrees with the driver's buffer id";
    hot_line.pipeline->submit(event);
}

void set_up_pin_on_alloc(uint64_t min_size, RegistrationCache *(*cache_on_first_need)())
{
    pin_min_size = min_size;
    cache_for_pins = cache_on_first_need;
}

void pin_new_allocation(const char *api, Via via, MemoryKind kind, int32_t dev, uint64_t addr,
                        uint64_t size)
{
    if (size < pin_min_size || !cache_for_pins)
        return;
    switch (kind) {
    case MemoryKind::device:
    case MemoryKind::pitch:
    case MemoryKind::pool:
    case MemoryKind::vmm_mapping:
        break;
    default:
        return; // host memory is not GPU memory; managed memory is never pinned
    }
    RegistrationCache *cache = cache_for_pins();
    if (!cache)
        return;
    pin_cause = PinCause{api, via, kind, dev};
    Registration reg;
    Status status = cache->lookup(addr, size, reg);
    pin_cause = PinCause{};
    if (status.ok())
        return;
    Event event = cache_event(EventKind::error, api, addr, size);
    event.via = via;
    event.mem = kind;
    event.dev = dev;
    event.rc = status.detail;
    event.msg = status.what;
    hot_line.pipeline->submit(event);
}

} // namespace gdrhook
