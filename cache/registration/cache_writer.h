// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The registration cache's writer: a miss pins and publishes a new entry;
// invalidate(), revoke(), retire_all() and the budgets' evictions take
// entries out of the index. It retires what leaves the index; the
// reclaimer (reclaimer.h) takes the retired entries and index blocks and
// unpins and frees them once that is safe.
//
// Invariants (who writes what, and which orderings pair):
//  - Writers serialize on one mutex, never held across a backend pin. It
//    guards the index root and the page hash (published_state.h), the
//    pending pins, the invalidation log, the LRU list, the budgets'
//    counts, the retired lists and the locked counters.
//  - Publishing: the new index root is stored (release) and the page hash
//    loses the removed entries before the generation moves (seq_cst); a
//    removed entry is retired, tagged with the epoch current then, only
//    after the move, so a reader that sees the new generation finds none
//    of them and a hold published before the move is seen by the
//    reclaimer's scan.
//  - A pin that ran while an overlapping range was invalidated is never
//    published (the invalidation log), and concurrent misses of
//    overlapping ranges wait for the first pin instead of pinning twice.
//  - `inflight_pins_` counts pins between their plan and their publication
//    (or failure). It rises (seq_cst) before the pin starts and drops
//    (seq_cst) only after the entry is in the index and the page hash:
//    invalidate()'s lock-free path reads it (seq_cst) after the free it
//    guards, so either it sees a pin in flight (and takes the mutex) or
//    the pin's entry is already visible to its index search.
//  - pin_clock() counts pins started; an invalidate() after the real free
//    removes only entries whose pin started up to the clock it read then.
//  - Pins and unpins are counted together under the mutex (a pin here,
//    an unpin through count_unpins()), so that pinned_now() reads one set.
#pragma once

#include "cache/backends/pin_backend.h"
#include "cache/base/status.h"
#include "cache/prim/spin_then_sleep_mutex.h"
#include "cache/registration/cache_entry.h"
#include "cache/registration/cache_options.h"
#include "cache/registration/cache_stats.h"
#include "cache/registration/hit_cache.h"
#include "cache/registration/invalidation_log.h"
#include "cache/registration/lru_list.h"
#include "cache/registration/published_state.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace gdrhook {

inline constexpr uint64_t cache_granule = 64 * 1024; // GPU BAR page

class CacheWriter {
public:
    // `reclaim_now` unpins what was retired, on the calling thread: a pin
    // refused for lack of BAR space calls it after evicting.
    CacheWriter(PinBackend &backend, const CacheOptions &options, PublishedState &published,
                std::function<void()> reclaim_now);

    CacheWriter(const CacheWriter &) = delete;
    CacheWriter &operator=(const CacheWriter &) = delete;

    // A lookup found nothing: plan the pin (share one that exists or is
    // under way), pin with no lock held, publish unless freed meanwhile.
    Status miss(ThreadRecord *record, uint64_t addr, uint64_t end, Registration &out,
                HeldRegistration *held);

    // RegistrationCache::invalidate(), revoke() and retire_all().
    // `claim`: the calling thread claims what it retires (cache_entry.h).
    size_t invalidate(ThreadRecords &records, uint64_t addr, uint64_t end, uint64_t started_up_to,
                      bool claim = false);
    std::vector<Registration> revoke(const std::vector<uint64_t> &backend_handles);
    size_t retire_all();

    uint64_t pin_clock() const { return pin_starts_.load(std::memory_order_seq_cst); }

    // The reclaimer's side of the hand-over: what was retired since, with
    // its tags, moves to the reclaimer's lists.
    void take_retired(std::vector<CacheEntry *> &entries, std::vector<RetiredNode> &nodes);
    bool has_retired() const;
    // The reclaimer unpinned `count` entries of `bytes` in all.
    void count_unpins(size_t count, uint64_t bytes);

    // Every entry in the index (teardown: no thread uses the cache).
    std::vector<CacheEntry *> indexed_entries() const;

    // The writer's counters, the entry count and the pin accounting.
    CacheStats stats() const;
    PinnedNow pinned_now() const;
    size_t size() const;
    void wake() const;
    void after_fork_in_child();

private:
    struct PendingPin {
        uint64_t start, end;
    };
    // A miss's pin: the range wanted, the range pinned (aligned, merged
    // with what it overlaps), and where the invalidation log and the pin
    // clock stood when it started.
    struct PinPlan {
        uint64_t want_start = 0, want_end = 0;
        bool exact_tried = false;
        uint64_t start = 0, stop = 0;
        uint64_t invalidation_seq = 0, pin_started = 0;
    };

    // mu_ held from here on.
    // True when the range is in the index already (out, held filled);
    // else the plan is made and its range is pending.
    bool plan_pin_locked(std::unique_lock<SpinThenSleepMutex> &lock, ThreadRecord *record,
                         uint64_t addr, uint64_t end, Registration &out, HeldRegistration *held,
                         PinPlan &plan);
    CacheEntry *new_entry_locked(const PinPlan &plan, Pin pin, uint64_t buffer_id);
    // Into the index, replacing what it merges and evicting for the
    // budgets; returns whether entries were retired (the worker must run).
    bool publish_entry_locked(CacheEntry *entry, ThreadRecord *record, uint64_t addr,
                              Registration &out, HeldRegistration *held);
    void publish_locked(const std::vector<IndexItem> &removed, const IndexItem &inserted,
                        UnpinReason reason, uint64_t claim = 0);
    void retire_locked(CacheEntry *entry, UnpinReason reason, uint64_t now);
    bool pick_victims_locked(uint64_t need_bytes, uint64_t need_entries,
                             std::vector<IndexItem> &victims);
    void hash_remove_locked(const std::vector<IndexItem> &removed);
    void hold_locked(ThreadRecord *record, CacheEntry *entry, HeldRegistration &held);

    // No lock held.
    bool evict_for(uint64_t bytes, uint64_t entries, UnpinReason reason);
    // Under the descriptor budget, room for one more pin: the least
    // recently used pins unpinned now on this thread where needed. False
    // when every pin the budget allows is in use.
    bool room_for_a_descriptor();
    uint64_t descriptors_held() const;
    Status pin_with_eviction(uint64_t start, uint64_t end, Pin &pin);

    PinBackend &backend_;
    const CacheOptions &options_;
    PublishedState &published_;
    const HitCache hit_cache_;
    const std::function<void()> reclaim_now_;

    alignas(64) std::atomic<uint64_t> inflight_pins_{0};
    std::atomic<uint64_t> pin_starts_{0}; // written under mu_

    alignas(64) mutable SpinThenSleepMutex mu_;
    std::condition_variable_any pin_done_;
    std::vector<PendingPin> pending_;
    InvalidationLog invalidations_;
    LruList<CacheEntry> lru_; // front: most recently inserted or second-chanced
    uint64_t next_id_ = 1;
    uint64_t entries_ = 0;
    uint64_t index_bytes_ = 0;
    std::vector<CacheEntry *> retired_entries_;
    std::vector<RetiredNode> retired_nodes_;
    CacheStats locked_stats_; // the fields writers count
    std::atomic<uint64_t> unpins_{0};
    std::atomic<uint64_t> bytes_pinned_{0}, peak_bytes_pinned_{0};
};

} // namespace gdrhook
