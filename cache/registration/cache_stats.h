// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the registration cache counts, for the exit report, the public API
// and the benchmark. Hits are counted per thread (no shared write on the hit
// path) and summed when stats are read, so a snapshot taken while threads
// run is approximate; everything else is exact.
#pragma once

#include <cstdint>

namespace gdrhook {

struct CacheStats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t pins = 0; // successful backend pins
    uint64_t pin_failures = 0;
    uint64_t no_space_retries = 0; // pins retried after evicting
    uint64_t unpins = 0;
    uint64_t unpin_failures = 0;
    uint64_t invalidated = 0;     // entries removed by invalidate()
    uint64_t revoked = 0;         // entries the backend lost on its own
    uint64_t evictions = 0;       // entries removed for the budgets or BAR space
    uint64_t merges = 0;          // entries replaced by a wider one
    uint64_t stale_pins = 0;      // pins discarded: freed while they ran
    uint64_t managed_refused = 0; // lookups of managed memory
    uint64_t unpins_deferred = 0; // unpins that waited for a put()
    uint64_t unfreed = 0;         // unpinned entries and old index blocks awaiting the worker
    uint64_t entries = 0;         // in the index now
    uint64_t bytes_pinned = 0;    // pinned now, index and retired alike
    uint64_t peak_bytes_pinned = 0;
    uint64_t verify_checks = 0;
    uint64_t verify_mismatches = 0; // stale hits caught in verify mode
};

// Pins held and their bytes at one instant (RegistrationCache::pinned_now).
struct PinnedNow {
    uint64_t pins = 0;
    uint64_t bytes = 0;
};

} // namespace gdrhook
