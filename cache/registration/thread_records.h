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
//    counters are atomics only so that stats() may sum them meanwhile).
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

struct alignas(64) HitSlot { // one cache line a slot
    // In the form a hit hands out: copied out whole, in three 16-byte moves.
    Registration reg;
    uint64_t gen = 0; // 0 never matches: the generation starts at 1
    uint32_t uses = 0;

    bool covers(uint64_t addr, uint64_t end) const
    {
        return reg.base <= addr && end <= reg.base + reg.length;
    }
};
static_assert(sizeof(HitSlot) == 64, "one cache line");

struct alignas(64) ThreadRecord {
    // Epoch the owner's read section began in; 0 outside one.
    std::atomic<uint64_t> active{0};
    // Entry ids held by get() without put(); 0 = free. Written by the
    // owner (0 -> id) and by whichever thread calls put() (id -> 0).
    std::array<std::atomic<uint64_t>, hold_slot_count> holds{};
    // Owner-written counters, summed by stats().
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
inline void count_by_owner(std::atomic<uint64_t> &counter)
{
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
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
