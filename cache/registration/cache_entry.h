// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// One cached registration, as the writer (cache_writer.h) makes it and the
// reclaimer (reclaimer.h) unpins and frees it, and what a get() holds.
//
// Invariants: the fields readers see (`range`) are written before the entry
// is published and never change afterwards. `pin_started`, `hashed` and
// the LRU links are the writer's (under its mutex); `retired_ns`, `tag` and
// `reason` are written by the writer when it retires the entry and read by
// the reclaimer after it took the entry under the same mutex (`claimed_by`
// too, which the reclaimer may clear under its own); `unpinned` and
// `pin` are the reclaimer's from then on (under its own mutex). `refs`
// counts holds that found no free hold slot: incremented by get() (seq_cst,
// then the generation re-read), decremented by put() (seq_cst).
#pragma once

#include "cache/backends/pin_backend.h"
#include "cache/registration/pinned_range.h"
#include "cache/registration/range_index.h"
#include "cache/registration/thread_records.h"

#include <atomic>
#include <cstdint>
#include <utility>

namespace gdrhook {

enum class UnpinReason : uint8_t {
    invalidated,
    evicted,
    merged,
    stale,
    revoked,
    teardown,
    fd_budget, // made room under the budget of descriptors pins may hold
};
const char *to_string(UnpinReason reason);

struct CacheEntry {
    PinnedRange range;
    uint64_t pin_started = 0; // pin_clock() when its pin began
    bool hashed = false;      // in the page hash (writer)

    std::atomic<uint32_t> refs{0}; // counted holds (hold slots full)

    CacheEntry *lru_prev = nullptr, *lru_next = nullptr; // writer
    uint64_t retired_ns = 0;                             // writer, then the reclaimer
    uint64_t tag = 0;                                    // epoch when retired
    UnpinReason reason = UnpinReason::invalidated;
    // The free whose thread releases it (this_threads_claim()), or 0: any
    // reclaim may. Written with `tag`; cleared by the reclaimer when its
    // free found it held.
    uint64_t claimed_by = 0;
    bool unpinned = false;
    Pin pin;
    // A deferred pin's SYNC_MEMOPS was set (range.peer_setup_deferred):
    // set by the first library's get, read by the later ones.
    std::atomic<bool> peer_ready{false};
};

// The calling thread's claim on the entries its frees retire
// (CacheEntry::claimed_by): never 0. The reclaimer hands them out.
uint64_t this_threads_claim();

// The index keeps a registration's range in its keys and the rest beside
// them (range_index.h): these two put them together and apart.
inline PinnedRange range_of(const IndexRecord &found)
{
    const IndexValues &v = found.values;
    PinnedRange range{found.start, found.end, v.id, v.buffer_id, v.handle, v.fd};
    range.peer_setup_deferred = v.peer_setup_deferred;
    return range;
}

inline IndexItem item_of(CacheEntry *entry)
{
    const PinnedRange &r = entry->range;
    return IndexItem{r.start, r.end, entry,
                     IndexValues{r.id, r.buffer_id, r.handle, r.fd, r.peer_setup_deferred}};
}

// An index block the writer replaced, with the epoch it was retired in.
using RetiredNode = std::pair<void *, uint64_t>;

// A registration held by get() until put(). Plain data: the public C API
// copies it into its opaque words.
struct HeldRegistration {
    Registration reg;
    ThreadRecord *record = nullptr; // hold slot owner, or
    CacheEntry *entry = nullptr;    // counted hold when all slots were taken
    uint32_t slot = 0;
};

} // namespace gdrhook
