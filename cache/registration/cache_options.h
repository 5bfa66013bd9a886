// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// How a registration cache is set up: its budgets, verify mode and the
// callbacks through which it asks the hook about allocations and reports.
#pragma once

#include "cache/base/config.h"
#include "cache/registration/pinned_range.h"

#include <cstdint>
#include <functional>

namespace gdrhook {

// The allocation containing an address, as the hook's AllocTracker or the
// driver (cuMemGetAddressRange) knows it.
struct AllocationInfo {
    uint64_t base = 0;
    uint64_t size = 0;
    bool managed = false;
};

struct CacheOptions {
    uint64_t max_bytes = 0;       // 0: no byte budget
    uint64_t max_entries = 65536; // 0: no entry budget
    // Pins alive at once (made and not yet unpinned: indexed, retired or
    // in flight) where each holds a descriptor; 0: no such budget
    // (backends/descriptor_budget.h).
    uint64_t max_descriptors = 0;
    bool verify = false; // cross-check every hit against buffer_id
    // Widens a lookup to the whole allocation; may be empty.
    std::function<bool(uint64_t addr, AllocationInfo &out)> allocation_of;
    // CU_POINTER_ATTRIBUTE_BUFFER_ID of addr, 0 if unknown; may be empty.
    std::function<uint64_t(uint64_t addr)> buffer_id;
    // Asks the worker to call drain_unpins() soon: called when retired work
    // appears that no free event will wake it for (a put() releasing an
    // entry retired while held, an eviction). May be empty.
    std::function<void()> wakeup;
    // Verify mode found a stale hit (the hook logs an `error` event).
    std::function<void(uint64_t addr, uint64_t expected, uint64_t actual)> on_mismatch;
    // A miss pinned a new registration (the hook logs a `pin` event). Runs
    // on the thread that missed, with no lock of the cache held, before
    // lookup() returns it. `started`: when the pin began, in the event
    // clock's queued form (queued_event.h), the `pin` line's time. May be
    // empty.
    std::function<void(const Registration &reg, uint64_t started)> on_pin;

    static CacheOptions from(const Config &config);
};

} // namespace gdrhook
