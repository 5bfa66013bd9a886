// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The registration cache: lookup(ptr, len) returns the pinned registration
// that covers the range, pinning it through a backend on a miss; a hit takes
// no lock, makes no driver call and writes nothing another thread reads.
//
// It is three parts, each with its invariants at the top of its header:
//  - the per-thread records and hit cache (thread_records.h, hit_cache.h):
//    each thread's own copies of registrations it hit, its counters, its
//    read-section word and its hold slots;
//  - the writer (cache_writer.h): a miss pins and publishes, invalidate(),
//    revoke(), retire_all() and the budgets take entries out of the index;
//  - the reclaimer (reclaimer.h): decides when a retired entry may be
//    unpinned (nobody holds it) and freed (no reader can reach it).
// They meet in what readers read and the writer publishes
// (published_state.h): the index root, the page hash, the generation and
// the epoch. This class holds the three and the read side: the lookups
// below, in the order a lookup tries them.
//
// How a hit avoids every shared write:
//  - A slot of the thread's hit cache is valid while the generation has
//    not moved since it was filled; it moves only when an entry leaves the
//    index, after the index without it is published, so a thread that looks
//    up after invalidate() returned sees the new generation and then the
//    new index (coherence, docs/design.md).
//  - Past its hit cache a thread probes the page hash (page_hash.h): one
//    cache line per small entry's page, a copy of what a hit returns, kept
//    by the writer so that an entry leaves it before the generation moves.
//    A hit there needs no read section: it touches nothing that is freed.
//  - Past the page hash a thread searches the index (range_index.h), an
//    immutable structure published through one atomic pointer, inside a
//    read section: it writes the current epoch into its own record.
//  - get() publishes the entry's id in one of the thread's hold slots
//    (hazard-pointer style) and re-checks the generation; the reclaimer
//    does not unpin an entry whose id is in any hold slot. Both store-load
//    orderings use the asymmetric fence (asymmetric_fence.h).
//
// invalidate() only retires entries. unpin_retired() (a free, on its own
// thread) and drain_unpins() (the worker) unpin every retired entry nobody
// holds, in one backend call; drain_unpins() reports each unpin, whichever
// thread did it, with its delay from the invalidation.
#pragma once

#include "cache/prim/hot_path.h"

#include "cache/backends/pin_backend.h"
#include "cache/base/status.h"
#include "cache/prim/asymmetric_fence.h"
#include "cache/registration/cache_entry.h"
#include "cache/registration/cache_options.h"
#include "cache/registration/cache_stats.h"
#include "cache/registration/cache_writer.h"
#include "cache/registration/hit_cache.h"
#include "cache/registration/pinned_range.h"
#include "cache/registration/published_state.h"
#include "cache/registration/reclaimer.h"
#include "cache/registration/thread_records.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace gdrhook {

class RegistrationCache {
public:
    RegistrationCache(std::unique_ptr<PinBackend> backend, CacheOptions options);
    ~RegistrationCache(); // unpins everything; no thread may still use it

    RegistrationCache(const RegistrationCache &) = delete;
    RegistrationCache &operator=(const RegistrationCache &) = delete;

    // The registration covering [addr, addr + length), pinned on a miss.
    // Valid until the memory is freed: use get() to keep it past a free.
    Status lookup(uint64_t addr, uint64_t length, Registration &out);

    // Like lookup(), and the pin stays valid until put(), even if the
    // memory is freed (invalidated) meanwhile. put() may run on any thread.
    Status get(uint64_t addr, uint64_t length, HeldRegistration &out);
    void put(HeldRegistration &held);

    // For a library's get() (include/gdrhook.h), before it answers: what a
    // pin made on the shim's own initiative left undone before a peer may
    // use the memory (PinBackend::prepare_for_peer), done once per entry by
    // the first get that needs it. A branch on the registration for every
    // other pin: no driver call, nothing more read.
    Status prepare_for_peer(const HeldRegistration &held)
    {
        if (GDRHOOK_LIKELY(!held.reg.peer_setup_deferred))
            return Status::success();
        return prepare_deferred_pin(held);
    }

    // The application frees [addr, addr + length) (length 0: the range that
    // contains addr). After this returns no lookup returns an overlapping
    // registration. Lock-free when nothing overlaps and no pin is in
    // flight; never waits for a pin. Call it before the real free and again
    // after it (a lookup racing the free may have pinned in between), the
    // second time with started_up_to = pin_clock() read once the real free
    // returned: pins started later are of memory allocated after the free
    // (another thread may already have the address back) and stay.
    // Returns the number of entries it removed.
    size_t invalidate(uint64_t addr, uint64_t length, uint64_t started_up_to = UINT64_MAX);
    // invalidate() for a free, whose thread calls unpin_retired() next:
    // what it retires is this thread's to release, and no other thread's
    // reclaim takes it, so the free never waits for a neighbour's release.
    size_t invalidate_to_unpin(uint64_t addr, uint64_t length, uint64_t started_up_to = UINT64_MAX);

    // How many pins have started so far (see invalidate()).
    uint64_t pin_clock() const { return writer_.pin_clock(); }

    // The backend lost these pins on its own (PinBackend::take_revocations):
    // their entries leave the index at once and are unpinned by the next
    // drain_unpins() with reason `revoked`. Returns the registrations
    // removed, for the `revoke` events.
    std::vector<Registration> revoke(const std::vector<uint64_t> &backend_handles);

    // Every registration leaves the index (the process is exiting); the
    // next drain_unpins() unpins each one nobody holds, reason `teardown`.
    size_t retire_all();

    // The worker: unpins every retired entry that nobody holds, with one
    // backend call, and reports each unpin. Returns how many it unpinned.
    size_t drain_unpins(const std::function<void(const UnpinRecord &)> &report);
    // The worker, before each event it writes: reports the unpins done
    // (by frees, on their threads) since, and unpins nothing.
    size_t report_unpins(const std::function<void(const UnpinRecord &)> &report)
    {
        return reclaimer_.report(report);
    }

    // Unpins, on the calling thread, every retired entry nobody holds (a
    // held one waits for its put()); the next drain_unpins() reports them.
    // For a free, whose memory the driver keeps allocated while an export
    // of it is open: done before the free returns, as if never pinned.
    void unpin_retired() { reclaimer_.reclaim(); }
    // Whether retired entries, or unpins not yet reported, wait for
    // drain_unpins().
    bool has_retired() const;
    // Whether a retired entry waited for its put() at the last reclaim (it
    // may have been put back since): lock-free, for a free that removed
    // nothing, which then unpins it before it returns.
    bool retired_waited_for_put() const
    {
        return published_.pending_held.load(std::memory_order_relaxed) != 0;
    }

    CacheStats stats() const;

    // What is pinned now (in the index, or retired and not yet unpinned),
    // both numbers read at one instant: they always describe the same set
    // of pins, which stats() does not promise.
    PinnedNow pinned_now() const;

    const PinBackend &backend() const { return *backend_; }
    PinBackend &backend() { return *backend_; }
    size_t size() const;

    // In a forked child, before anything else uses the cache: the other
    // threads are gone (their read sections, holds and pins in flight with
    // them) and the mutexes may have been held at the fork.
    void after_fork_in_child();
    // Before a fork and after it in the parent (reclaimer.h says why).
    void hold_for_fork() { reclaimer_.hold_for_fork(); }
    void after_fork_in_parent() { reclaimer_.after_fork_in_parent(); }

private:
    // records_.mine(), with its rare path a call on this class: a hit
    // inlined into a caller's loop then keeps no pointer to a part alive.
    ThreadRecord *this_thread_record()
    {
        if (GDRHOOK_LIKELY(tls_bindings[0].serial == records_.serial()))
            return tls_bindings[0].record;
        return bind_thread();
    }
    GDRHOOK_NOINLINE ThreadRecord *bind_thread();

    static uint64_t range_end(uint64_t addr, uint64_t length)
    {
        return addr + (length ? length : 1);
    }

    // The rest of lookup() and get() once the thread's hit cache did not
    // answer: out of line, so that a hit is a few instructions with no
    // registers to save wherever lookup() and get() are inlined.
    GDRHOOK_NOINLINE Status lookup_past_hit_cache(ThreadRecord *record, uint64_t addr, uint64_t end,
                                                  uint64_t gen, HitSlot *slot, Registration &out);
    GDRHOOK_NOINLINE Status get_past_hit_cache(ThreadRecord *record, uint64_t addr, uint64_t end,
                                               uint64_t gen, HitSlot *slot, HeldRegistration &out);
    // The index, inside a read section; a miss goes to the writer.
    Status lookup_shared(ThreadRecord *record, uint64_t addr, uint64_t end, uint64_t gen,
                         Registration &out, HeldRegistration *held);
    bool verify_hit(ThreadRecord *record, uint64_t addr, const Registration &reg);
    GDRHOOK_NOINLINE Status prepare_deferred_pin(const HeldRegistration &held);
    CacheEntry *held_entry(const Registration &reg);
    void put_counted(CacheEntry *entry);
    // Out of line and on this class: put() inlined into a caller's loop
    // then needs no address of a part, only `this`.
    void wake();

    std::unique_ptr<PinBackend> backend_;
    CacheOptions options_;
    const bool verify_;
    const HitCache hit_cache_;
    ThreadRecords records_;
    PublishedState published_;
    CacheWriter writer_;
    Reclaimer reclaimer_;
    std::atomic<uint64_t> verify_mismatches_{0};
};

inline Status RegistrationCache::lookup(uint64_t addr, uint64_t length, Registration &out)
{
    const uint64_t end = range_end(addr, length);
    ThreadRecord *record = this_thread_record();
    // acquire: a thread that sees the generation an invalidation made also
    // sees the index it published before.
    const uint64_t gen = published_.gen.load(std::memory_order_acquire);
    HitSlot *slot = HitCache::find(record, addr, end, gen);
    if (GDRHOOK_LIKELY(slot && slot->take_use())) {
        out = slot->reg; // the slot counts the hit (HitSlot::served())
        return Status::success();
    }
    // The rest works on a copy: were `out` itself handed to a call, the
    // caller's registration would live in memory on every path, and a hit
    // would pay its initialisation, the copy into it and the read back (8
    // stores and a load, measured in gdrhook-bench's loop).
    Registration past = out;
    const Status status = lookup_past_hit_cache(record, addr, end, gen, slot, past);
    out = past;
    return status;
}

inline Status RegistrationCache::get(uint64_t addr, uint64_t length, HeldRegistration &out)
{
    const uint64_t end = range_end(addr, length);
    ThreadRecord *record = this_thread_record();
    const uint64_t gen = published_.gen.load(std::memory_order_acquire);
    HitSlot *found = HitCache::find(record, addr, end, gen);
    if (found) {
        const HitSlot &slot = *found;
        int h = free_hold_slot(record);
        if (h >= 0) {
            record->holds[h].store(slot.reg.id, std::memory_order_relaxed);
            // Hazard protocol: the hold is visible before we re-read the
            // generation; the reclaimer retires (gen moves) before it scans.
            hold_fence();
            if (published_.gen.load(std::memory_order_acquire) == gen) {
                out.reg = slot.reg;
                out.record = record;
                out.slot = static_cast<uint32_t>(h);
                out.entry = nullptr;
                count_by_owner(record->hits);
                return Status::success();
            }
            record->holds[h].store(0, std::memory_order_release);
        }
    }
    HeldRegistration past = out; // as in lookup()
    const Status status = get_past_hit_cache(record, addr, end, gen, found, past);
    out = past;
    return status;
}

inline void RegistrationCache::put(HeldRegistration &held)
{
    if (held.record) {
        held.record->holds[held.slot].store(0, std::memory_order_release);
        // Dekker with the reclaimer: it sets pending_held_ and then scans
        // the holds; we clear the hold and then read pending_held_.
        hold_fence();
        if (published_.pending_held.load(std::memory_order_relaxed))
            wake();
    } else if (held.entry) {
        put_counted(held.entry);
    }
    held = HeldRegistration{};
}

} // namespace gdrhook
