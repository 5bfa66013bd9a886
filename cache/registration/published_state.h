// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the registration cache's readers read and its writer publishes: the
// index root, the page hash, the generation and the epoch. The three parts
// of the cache meet here: the thread records and hit cache (readers), the
// writer (cache_writer.h) and the reclaimer (reclaimer.h).
//
// Invariants (who writes what, and which orderings pair):
//  - `head` (the range index, range_index.h) and the page hash are written
//    by the writer alone, under its mutex. head is stored with release and
//    loaded by readers with acquire: a reader that loads a root sees its
//    leaves complete.
//  - `gen` moves (seq_cst) only when an entry leaves the index, and only
//    after the index without it is stored and the page hash lost it. A
//    lookup loads it with acquire before it trusts a hit-cache slot, so a
//    thread that sees the new generation sees the new index. get()
//    publishes its hold, hold_fence(), then re-reads gen: the writer
//    moves gen before the reclaimer can take the entry, and the reclaimer
//    hold_fence()s before it scans the holds, so either get() sees the
//    move (and drops the hold) or the scan sees the hold.
//  - `epoch` is bumped by the reclaimer's worker round alone (seq_cst)
//    before it heavy_fence()s and scans the read sections; a reader
//    copies it into its record when a read section begins (enter()).
//    Everything the writer retires is tagged with the epoch current then
//    (under its mutex).
//  - `pending_held` is set by the reclaimer when an entry waits for a
//    put(), and cleared when none does; put() reads it after clearing its
//    hold (hold_fence() on both sides: the Dekker pair that makes one of
//    them see the other).
#pragma once

#include "cache/prim/asymmetric_fence.h"
#include "cache/registration/page_hash.h"
#include "cache/registration/range_index.h"
#include "cache/registration/thread_records.h"

#include <atomic>
#include <cstdint>

namespace gdrhook {

struct PublishedState {
    explicit PublishedState(uint64_t max_entries) : hash(max_entries)
    {
        head.store(index_empty(), std::memory_order_release);
    }

    // A read section: what it reads of the index stays allocated until it
    // leaves (the reclaimer frees nothing tagged at or after its epoch).
    void enter(ThreadRecord *record)
    {
        // release: pairs with the reclaimer's acquire, so what this thread
        // read in earlier sections happens before a free it allows.
        record->active.store(epoch.load(std::memory_order_acquire), std::memory_order_release);
        light_fence(); // the store above is visible before the index is read
    }
    static void leave(ThreadRecord *record) { record->active.store(0, std::memory_order_release); }

    // Read-mostly: every lookup reads these, writers change them rarely.
    alignas(64) std::atomic<const IndexRoot *> head{nullptr};
    std::atomic<uint64_t> gen{1};
    std::atomic<uint64_t> epoch{1};
    std::atomic<uint32_t> pending_held{0};

    PageHash hash; // its table pointer is read-mostly too; writes: the writer's mutex
};

} // namespace gdrhook
