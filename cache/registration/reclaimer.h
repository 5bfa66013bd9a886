// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The registration cache's reclaimer: decides when a retired entry may be
// unpinned (nobody holds it) and when a retired entry or index block may be
// freed (no reader can still reach it), and does both. A free runs it on
// its own thread (RegistrationCache::unpin_retired()), the worker through
// drain_unpins(), a pin refused for lack of BAR space after evicting.
//
// Invariants (who writes what, and which orderings pair):
//  - One round at a time (its own mutex); it takes what the writer
//    retired under the writer's mutex, so every entry and block it holds
//    is out of the index, out of the page hash, and the generation moved
//    after it left (cache_writer.h).
//  - A round moves the pins it will release out of their entries under
//    the mutex and releases them after it, so that several threads'
//    releases (a dma-buf close each) run at once rather than queue behind
//    one another; the entries may be freed meanwhile.
//  - An entry a free retired is claimed by the free's thread
//    (CacheEntry::claimed_by): only that thread's reclaim, which follows
//    the retirement, releases it, so a free releases its own pin and never
//    waits for a neighbour's round to release it. A claimed entry its free
//    found held loses the claim: whoever reclaims after its put() releases
//    it. The claims of threads before a fork are void in the child, and
//    every claim once the process ends (void_claims()).
//  - Every other round is shared and numbered. A reclaim returns only once
//    every shared round numbered up to the last one begun when it held the
//    mutex has released its pins: whatever its caller retired unclaimed
//    before calling was taken by one of those, or by its own round, so a
//    free still returns with its memory unpinned.
//  - A round that unpins sets pending_held, then hold_fence(): every hold
//    a reader stored before its own hold_fence() is visible to the scan
//    of the holds that follows (acquire loads). No system call: a free's
//    unpin waits for no other thread (asymmetric_fence.h says what
//    membarrier(2) cost).
//  - Unpin: an entry whose id is in no hold slot and whose count of holds
//    is 0. A hold published after the scan re-reads the generation, which
//    moved before the entry was retired, and lets go (thread_records.h).
//  - Free (free_unreachable(), the worker's drain only, outside mu_): it
//    takes the unpinned entries and old index blocks, bumps the epoch
//    (seq_cst), heavy_fence()s, and frees what is tagged before the epoch
//    of the oldest read section it then sees; a section that began later
//    could not have reached it. Every read-section word a reader stored
//    before its light_fence() is visible after heavy_fence()
//    (published_state.h). What it keeps goes back for the next drain.
//  - pending_held is cleared only by a round that left nothing held; put()
//    wakes the worker while it is set (the Dekker pair with put()).
#pragma once

#include "cache/backends/pin_backend.h"
#include "cache/base/status.h"
#include "cache/prim/spin_then_sleep_mutex.h"
#include "cache/registration/cache_entry.h"
#include "cache/registration/cache_stats.h"
#include "cache/registration/cache_writer.h"
#include "cache/registration/published_state.h"
#include "cache/registration/thread_records.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace gdrhook {

// One unpin done by the reclaimer, for the `unpin` event.
struct UnpinRecord {
    uint64_t entry_id = 0; // the cache entry's id (Registration::id)
    uint64_t addr = 0;
    uint64_t length = 0;
    uint64_t handle = 0; // the kernel module's handle (kmod backend), else 0
    int32_t fd = -1;     // the number the fd had (closed now)
    uint64_t lat_ns = 0; // from the invalidation (or eviction) to the unpin's end
    // When the release began, in the event clock's queued form
    // (queued_event.h): the `unpin` line's time, whenever it is written.
    uint64_t started = 0;
    UnpinReason reason = UnpinReason::invalidated;
    Status status; // the batch's backend result
};

// The worker frees memory once this many unpinned entries and old index
// blocks wait (free_unreachable()): one membarrier(2) for a batch of frees
// rather than one for each. What waits is a few hundred bytes an entry and
// the blocks a rebuild replaced; the cache's teardown frees the rest.
inline constexpr size_t memory_round_batch = 64;

class Reclaimer {
public:
    Reclaimer(PinBackend &backend, PublishedState &published, const ThreadRecords &records,
              CacheWriter &writer);

    Reclaimer(const Reclaimer &) = delete;
    Reclaimer &operator=(const Reclaimer &) = delete;

    // Unpins every retired entry nobody holds, in one backend call, and
    // frees what no reader can reach; the unpins wait in drain() for
    // their report.
    void reclaim();
    // reclaim(), then reports every unpin not reported yet. Returns how
    // many it reported.
    size_t drain(const std::function<void(const UnpinRecord &)> &report);
    // Reports the unpins done and not reported yet, without unpinning
    // anything: for the worker, before each event it writes, so that an
    // unpin is written before events that happened after it. A load and
    // nothing more while there is none.
    size_t report(const std::function<void(const UnpinRecord &)> &report);
    // Whether unpins wait for drain(), or entries taken wait for their unpin.
    bool has_unreported() const;
    // Whether memory_round_batch unpinned entries and old index blocks wait
    // for drain() to free them (a free's own round leaves them): a load,
    // for the worker.
    bool memory_waiting() const
    {
        return unfreed_.load(std::memory_order_relaxed) >= memory_round_batch;
    }

    // Teardown, no thread using the cache: unpins, held or not, and frees
    // `indexed` and everything retired.
    void release_all(std::vector<CacheEntry *> indexed);

    // The process ends: every claim is void, any reclaim releases what
    // nobody holds (the last drain too), and a free waits as for others'.
    void void_claims();

    void add_stats(CacheStats &s) const;
    // Around a fork: the releases in flight end first, and none starts
    // until the fork is done. A release runs outside the lock on its
    // thread's stack; a child forked in the middle of one would hold the
    // copies of pins nobody releases there (their pins restated in its
    // log, no unpin ever), and the parent's would be half released.
    void hold_for_fork();
    void after_fork_in_parent();
    void after_fork_in_child();

private:
    // What a round took to release, outside the lock.
    struct TakenPins {
        uint64_t round = 0;  // its number in rounds_started_, if shared
        bool shared = false; // took an entry its caller did not claim
        std::vector<Pin> pins;
        std::vector<UnpinRecord> records; // one a pin, completed once released
        std::vector<uint64_t> retired_ns; // one a pin: when its entry was retired
        uint64_t bytes = 0;
    };

    // reclaim() for the thread of `claim` (0: none, the worker's drain,
    // which the profile tells apart).
    void reclaim_on(uint64_t claim, bool worker);
    // mu_ held.
    void note_memory_waiting();
    void take_round(TakenPins &taken, uint64_t claim);
    std::vector<uint64_t> scan_holds() const;
    bool claimed_by_another(const CacheEntry *e, uint64_t claim) const;
    std::vector<CacheEntry *> take_unheld(const std::vector<uint64_t> &held, uint64_t claim,
                                          bool &shared);
    void take_pins(const std::vector<CacheEntry *> &batch, TakenPins &taken);
    // mu_ not held.
    void free_unreachable();
    uint64_t oldest_read_section() const;
    void release(TakenPins &taken, bool worker);
    void wait_for_releases_up_to(uint64_t round);

    PinBackend &backend_;
    PublishedState &published_;
    const ThreadRecords &records_;
    CacheWriter &writer_;

    mutable SpinThenSleepMutex mu_;          // one round at a time; their releases run outside it
    std::condition_variable_any released_;   // a round left rounds_releasing_
    uint64_t rounds_started_ = 0;            // shared rounds that took pins to release
    std::vector<uint64_t> rounds_releasing_; // their numbers, while released
    size_t own_rounds_releasing_ = 0;        // rounds releasing their caller's claims only
    bool fork_waiting_ = false;              // hold_for_fork() waits on released_
    uint64_t claims_from_ = 1;               // smaller claims are void (a parent's threads)
    std::vector<CacheEntry *> considered_;
    std::vector<RetiredNode> nodes_waiting_;
    std::vector<UnpinRecord> reports_;
    std::atomic<bool> reports_waiting_{false}; // reports_ is not empty (a hint)
    std::atomic<size_t> unfreed_{0}; // unpinned entries and blocks in considered_, nodes_waiting_
    std::atomic<uint64_t> unpin_failures_{0}, deferred_{0};
};

} // namespace gdrhook
