// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The events the registration cache causes, as the shim logs them: `pin`
// (with what caused it: an allocation under GDRHOOK_PIN=alloc, else a
// library's gdrhook_get()), verify findings, and the worker's `unpin` and
// `revoke`; and pin-on-alloc itself, a subscriber to allocations
// (notify/alloc_subscribers.h, which says why it hears after UCX).
#pragma once

#include "cache/events/event.h"
#include "cache/notify/alloc_subscribers.h"
#include "cache/prim/hot_path.h"

#include <cstdint>

namespace gdrhook {

struct Registration;
class RegistrationCache;

// Told by the runtime once the process's cache has its backend.
void set_pin_event_backend(const char *name);

// CacheOptions::on_pin and on_mismatch of the process's cache.
void log_pin(const Registration &reg, uint64_t started);
void log_stale_hit(uint64_t addr, uint64_t expected, uint64_t actual);

// An event the worker records itself (revoke, unpin), stamped now.
Event worker_event(EventKind kind, uint64_t addr, uint64_t size, uint64_t entry_id);

// Pin-on-alloc as a subscriber to allocations: pin_new_allocation().
AllocSubscriber pin_on_alloc_subscriber();

// GDRHOOK_PIN=alloc, as the runtime sets it up: allocations of at least
// min_size are pinned in the cache `cache_on_first_need` returns (it
// creates the process's cache the first time; null when it cannot), from
// now on: the subscriber at `subscription` starts listening.
void set_up_pin_on_alloc(uint64_t min_size, RegistrationCache *(*cache_on_first_need)(),
                         AllocSubscription subscription);

// Allocations pin-on-alloc left unpinned for a reason that is not an
// error (a `skip` event each), counted by reason for the exit statistics.
enum class SkipReason : uint8_t {
    capture,        // a stream capture in progress: graph memory, or a pin it prohibits
    managed,        // managed memory is never pinned
    ipc,            // imported from another process: its owner's to pin
    host,           // host memory the backend cannot pin (registered memory;
                    // allocated where the device has no host dma-buf support)
    not_exportable, // the driver cannot export this kind (compressible: 999)
    unsupported,    // the backend cannot pin this memory
    fd_budget,      // every descriptor the budget allows is held by a pin in use
    count
};
const char *to_string(SkipReason reason);
uint64_t skips(SkipReason reason);

// A successful allocation of at least the minimum size: pins it when it is
// device memory, or host memory the backend can pin (pins_host_memory(),
// pins_registered_host_memory()); stream-ordered (pool) memory is pinned
// at its first lookup instead. The rest gets a `skip` event. Never fails
// the allocation: a pin that fails is logged as an `error` event.
GDRHOOK_HOT void pin_new_allocation(const char *api, Via via, MemoryKind kind, int32_t dev,
                                    uint64_t addr, uint64_t size);

} // namespace gdrhook
