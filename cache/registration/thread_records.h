// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The registration cache's per-thread records: each thread that looks up
// in a cache has one record of its own, so that a hit writes nothing another
// thread reads. A record holds the thread's hit cache (hit_cache.h), its
// counters, its read-section word and its hold slots.
//
// Invariants (who writes what, and which orderings pair):
//  - `active` is written by the owner only: the epoch its read section
//    began in (release, then light_fence(): visible before the index is
//    read), 0 when it leaves (release). The reclaimer reads it (acquire)
//    after its heavy_fence(), and frees nothing tagged at or after the
//    oldest epoch it saw (reclaimer.h).
//  - `holds` are entry ids held by get() without put(). The owner writes
//    0 -> id, then hold_fence(), then re-reads the generation; whichever
//    thread calls put() writes id -> 0 (release), then hold_fence(), then
//    reads pending_held (published_state.h). The reclaimer reads them
//    (acquire) after its own hold_fence(): a Dekker pair on each side, with
//    a full fence on both (asymmetric_fence.h says why not the light one).
//  - The counters, `slots` and `hash_seen` are the owner's alone (the
//    counters and a slot's `uses` are atomics only so that stats() may sum
//    them meanwhile).
//  - The list of records only grows; a record is never freed before its
//    cache, and `next` never changes once the record is published
//    (release: the reclaimer walks the list without a lock). `owned` is
//    guarded by the registry's mutex.
//  - A thread finds its record through tls_bindings: the most recent first,
//    so that a hit compares one serial.
#pragma once

#include "cache/prim/hot_path.h"
#include "cache/registration/pinned_range.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>

namespace gdrhook {

inline constexpr uint32_t hit_set_count = 512; // 64 KiB a thread: only the hot lines stay in L1
inline constexpr uint32_t hit_ways = 2; // 64 hot buffers span ~128 pages: 2 ways avoid conflicts
inline constexpr uint32_t hold_slot_count = 8;
// A hit-cache slot falls through to the index once every this many hits,
// which keeps the entry's LRU bit fresh without a write per hit.
inline constexpr uint32_t hit_refresh_period = 1024;

struct alignas(64) HitSlot { // one cache line a slot
    // In the form a hit hands out: copied out whole, in three 16-byte moves.
    Registration reg;
    uint64_t gen = 0; // 0 never matches: the generation starts at 1
    // Hits left before the slot falls through (hit_cache.h). It is also the
    // slot's hit counter, served() below, so that a hit writes no counter
    // of the record's: that one load and store, the same word each hit,
    // made every hit wait for the last one's store. Atomic only so that
    // stats() may read it meanwhile; written by the owner alone.
    std::atomic<uint32_t> uses{hit_refresh_period};

    HitSlot() = default;
    HitSlot &operator=(const HitSlot &other)
    {
        reg = other.reg;
        gen = other.gen;
        uses.store(other.uses_left(), std::memory_order_relaxed);
        return *this;
    }

    // In place, not from a temporary: a HitSlot on the stack (aligned to
    // its line) made every caller realign its frame, the common path too.
    void fill(const Registration &r, uint64_t g)
    {
        reg = r;
        gen = g;
        uses.store(hit_refresh_period, std::memory_order_relaxed);
    }

    bool covers(uint64_t addr, uint64_t end) const
    {
        return reg.base <= addr && end <= reg.base + reg.length;
    }

    // One hit: false when this one falls through instead (it is then
    // counted where it is answered, not here).
    bool take_use()
    {
        const uint32_t left = uses_left() - 1;
        uses.store(left, std::memory_order_relaxed);
        return left != 0;
    }

    // The hits this slot answered since it was filled or refreshed.
    uint32_t served() const
    {
        const uint32_t left = uses_left();
        if (left > hit_refresh_period)
            return 0; // not reachable: a slot that fell through is refreshed
        return left == 0 ? hit_refresh_period - 1 : hit_refresh_period - left;
    }

    uint32_t uses_left() const { return uses.load(std::memory_order_relaxed); }
};
static_assert(sizeof(HitSlot) == 64, "one cache line");

struct alignas(64) ThreadRecord {
    // Epoch the owner's read section began in; 0 outside one.
    std::atomic<uint64_t> active{0};
    // Entry ids held by get() without put(); 0 = free. Written by the
    // owner (0 -> id) and by whichever thread calls put() (id -> 0).
    std::array<std::atomic<uint64_t>, hold_slot_count> holds{};
    // Owner-written counters, summed by stats(). `hits` leaves out what
    // the slots answered since they were last banked (hits_of()).
    alignas(64) std::atomic<uint64_t> hits{0};
    std::atomic<uint64_t> misses{0};
    std::atomic<uint64_t> verify_checks{0};
    bool owned = false;                                    // guarded by the registry's mutex
    ThreadRecord *next = nullptr;                          // immutable once published
    std::array<HitSlot, hit_set_count * hit_ways> slots{}; // owner only
    // The entry id a set's last page-hash hit returned (owner only).
    std::array<uint64_t, hit_set_count> hash_seen{};
};

// Owner-only counter: a plain load and store, no locked instruction.
inline void count_by_owner(std::atomic<uint64_t> &counter, uint64_t n = 1)
{
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// Moves the hits a slot answered into the record's counter and starts its
// count over, before the slot is refreshed or overwritten. The slot first:
// a stats() meanwhile may miss these hits for a moment, never count them
// twice.
GDRHOOK_NOINLINE inline void bank_slot_hits(ThreadRecord *record, HitSlot &slot)
{
    const uint32_t served = slot.served();
    slot.uses.store(hit_refresh_period, std::memory_order_relaxed);
    if (served)
        count_by_owner(record->hits, served);
}

// The record's hits: its counter and what its slots answered since.
inline uint64_t hits_of(const ThreadRecord &record)
{
    uint64_t hits = record.hits.load(std::memory_order_relaxed);
    for (const HitSlot &slot : record.slots)
        hits += slot.served();
    return hits;
}

// A free hold slot of the record, or -1 when all are taken.
inline int free_hold_slot(const ThreadRecord *record)
{
    for (uint32_t i = 0; i < hold_slot_count; ++i)
        if (record->holds[i].load(std::memory_order_relaxed) == 0)
            return static_cast<int>(i);
    return -1;
}

// Which record the calling thread uses in which cache (most recent first).
struct TlsBinding {
    uint64_t serial;
    ThreadRecord *record;
};
inline constexpr int tls_binding_count = 4;
extern thread_local TlsBinding tls_bindings[tls_binding_count]
    __attribute__((tls_model("initial-exec")));

// One cache's records: hands each thread its own, takes it back when the
// thread exits (or binds to too many caches), and lets the reclaimer and
// stats() walk them all.
class ThreadRecords {
public:
    ThreadRecords();
    ~ThreadRecords(); // frees every record; no thread may still use them

    ThreadRecords(const ThreadRecords &) = delete;
    ThreadRecords &operator=(const ThreadRecords &) = delete;

    // The calling thread's record: one compare when it used this cache last.
    ThreadRecord *mine()
    {
        if (GDRHOOK_LIKELY(tls_bindings[0].serial == serial_))
            return tls_bindings[0].record;
        return bind_thread();
    }
    uint64_t serial() const { return serial_; }
    // The calling thread's record, found among its other bindings or made
    // (the rest of mine()).
    ThreadRecord *bind_thread();

    // Every record, owned or not (acquire: pairs with bind_thread()'s
    // release of the list head).
    template <class F> void for_each(F &&f) const
    {
        for (ThreadRecord *r = head_.load(std::memory_order_acquire); r; r = r->next)
            f(*r);
    }

    // In a forked child: only the calling thread survived; every other
    // record is free, outside a read section and holds nothing.
    void after_fork_in_child();

private:
    friend void release_thread_records_at_exit();

    void release(ThreadRecord *record);

    const uint64_t serial_;
    std::atomic<ThreadRecord *> head_{nullptr};
    std::mutex mutex_; // `owned`, and the list's growth
};

} // namespace gdrhook
