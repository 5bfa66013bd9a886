// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/pinning/pin_events.h"

#include "cache/base/capture.h"
#include "cache/events/event_clock.h"
#include "cache/events/event_pipeline.h"
#include "cache/prim/hot_line.h"
#include "cache/registration/registration_cache.h"

#include <atomic>

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

std::atomic<uint64_t> skip_counts[static_cast<int>(SkipReason::count)];

// CUDA_ERROR_UNKNOWN: what cuMemGetHandleForAddressRange answers for
// compressible memory (docs/design.md).
constexpr int cuda_error_unknown = 999;

// Not being pinned is not an error for these answers.
bool as_skip(const Status &status, SkipReason &reason)
{
    switch (status.code) {
    case StatusCode::managed: reason = SkipReason::managed; return true;
    case StatusCode::no_descriptors: reason = SkipReason::fd_budget; return true;
    case StatusCode::unsupported:
        reason = capture_in_progress() ? SkipReason::capture : SkipReason::unsupported;
        return true;
    case StatusCode::driver_error:
        reason = SkipReason::not_exportable;
        return status.detail == cuda_error_unknown;
    default: return false;
    }
}

// An event of the cache's, stamped now on the calling thread.
Event cache_event(EventKind kind, const char *api, uint64_t addr, uint64_t size)
{
    Event event = make_event(kind, api, Via::symbol, MemoryKind::none, addr, size);
    event.backend = backend_name;
    return event;
}

} // namespace

const char *to_string(SkipReason reason)
{
    switch (reason) {
    case SkipReason::capture: return "capture";
    case SkipReason::managed: return "managed";
    case SkipReason::ipc: return "ipc";
    case SkipReason::host: return "host";
    case SkipReason::not_exportable: return "not_exportable";
    case SkipReason::unsupported: return "unsupported";
    case SkipReason::fd_budget: return "fd_budget";
    case SkipReason::count: break;
    }
    return "unsupported";
}

uint64_t skips(SkipReason reason)
{
    return skip_counts[static_cast<int>(reason)].load(std::memory_order_relaxed);
}

void set_pin_event_backend(const char *name)
{
    backend_name = name;
}

Event worker_event(EventKind kind, uint64_t addr, uint64_t size, uint64_t entry_id)
{
    Event event = cache_event(kind, "gdrhook_worker", addr, size);
    event.entry_id = entry_id;
    return event;
}

void log_pin(const Registration &reg, uint64_t started)
{
    Event event = cache_event(EventKind::pin, pin_cause.api, reg.base, reg.length);
    // When the pin began, not when it was published.
    set_time_from_queued(event, started);
    event.via = pin_cause.via;
    event.mem = pin_cause.mem;
    event.dev = pin_cause.dev;
    event.entry_id = reg.id;
    hot_line.pipeline->submit(event);
}

void log_stale_hit(uint64_t addr, uint64_t, uint64_t)
{
    Event event = cache_event(EventKind::error, pin_cause.api, addr, 0);
    event.msg = "verify: a cache hit disagrees with the driver's buffer id";
    hot_line.pipeline->submit(event);
}

AllocSubscriber pin_on_alloc_subscriber()
{
    AllocSubscriber subscriber{};
    subscriber.name = "pin-on-alloc";
    subscriber.after_alloc = pin_new_allocation;
    return subscriber;
}

void set_up_pin_on_alloc(uint64_t min_size, RegistrationCache *(*cache_on_first_need)(),
                         AllocSubscription subscription)
{
    pin_min_size = min_size;
    cache_for_pins = cache_on_first_need;
    start_listening_to_allocations(subscription);
}

namespace {

void log_skip(const char *api, Via via, MemoryKind kind, int32_t dev, uint64_t addr, uint64_t size,
              SkipReason reason, int rc)
{
    skip_counts[static_cast<int>(reason)].fetch_add(1, std::memory_order_relaxed);
    Event event = cache_event(EventKind::skip, api, addr, size);
    event.via = via;
    event.mem = kind;
    event.dev = dev;
    event.rc = rc;
    event.reason = to_string(reason);
    hot_line.pipeline->submit(event);
}

bool host_memory_pinnable(int32_t dev)
{
    RegistrationCache *cache = cache_for_pins();
    return cache && cache->backend().pins_host_memory(dev);
}

bool registered_memory_pinnable()
{
    RegistrationCache *cache = cache_for_pins();
    return cache && cache->backend().pins_registered_host_memory();
}

} // namespace

void pin_new_allocation(const char *api, Via via, MemoryKind kind, int32_t dev, uint64_t addr,
                        uint64_t size)
{
    if (size < pin_min_size || !cache_for_pins)
        return;
    switch (kind) {
    case MemoryKind::device:
    case MemoryKind::pitch:
    case MemoryKind::vmm_mapping: break;
    case MemoryKind::pool:
        // Stream-ordered memory is valid in stream order, not when the
        // call returns: exporting it now fails. It is pinned at its first
        // lookup, and a free that comes first leaves nothing to undo.
        return;
    case MemoryKind::managed:
        log_skip(api, via, kind, dev, addr, size, SkipReason::managed, 0);
        return;
    case MemoryKind::ipc: log_skip(api, via, kind, dev, addr, size, SkipReason::ipc, 0); return;
    case MemoryKind::host:
        // Page-locked host memory the driver allocated exports as a
        // dma-buf where the device says so (CUDA 13.0).
        if (host_memory_pinnable(dev))
            break;
        log_skip(api, via, kind, dev, addr, size, SkipReason::host, 0);
        return;
    case MemoryKind::host_registered:
        // The program's own memory, which the driver does not export; an
        // integrated GPU's RDMA memory, which the module pins page by page.
        if (registered_memory_pinnable())
            break;
        log_skip(api, via, kind, dev, addr, size, SkipReason::host, 0);
        return;
    default: return; // a physical handle, not an address range
    }
    if (capture_in_progress()) {
        // A pin's SYNC_MEMOPS would invalidate the application's capture
        // (base/capture.h).
        log_skip(api, via, kind, dev, addr, size, SkipReason::capture, 0);
        return;
    }
    RegistrationCache *cache = cache_for_pins();
    if (!cache)
        return;
    pin_cause = PinCause{api, via, kind, dev};
    // Nobody asked for this pin: the program's memory keeps the semantics
    // the program gave it (SYNC_MEMOPS) until a library asks for the pin.
    pinning_on_own_initiative = true;
    Registration reg;
    Status status = cache->lookup(addr, size, reg);
    pinning_on_own_initiative = false;
    pin_cause = PinCause{};
    if (status.ok())
        return;
    SkipReason reason;
    if (as_skip(status, reason)) {
        log_skip(api, via, kind, dev, addr, size, reason, status.detail);
        return;
    }
    Event event = cache_event(EventKind::error, api, addr, size);
    event.via = via;
    event.mem = kind;
    event.dev = dev;
    event.rc = status.detail;
    event.msg = status.what;
    hot_line.pipeline->submit(event);
}

} // namespace gdrhook
