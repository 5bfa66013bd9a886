// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The registration cache: lookup(ptr, len) returns the pinned registration
// that covers the range, pinning it through a backend on a miss; a hit takes
// no lock, makes no driver call and writes nothing another thread reads.
//
// How a hit avoids every shared write:
//  - Each thread has a record (ThreadRecord) of its own: a small
//    direct-mapped cache of copies of registrations it hit (HitSlot), its
//    counters, its read-section word and its hold slots.
//  - A slot is valid while the cache's generation `gen_` has not moved since
//    it was filled. gen_ moves only when an entry leaves the index
//    (invalidate, eviction, merge), after the index without it is
//    published, so a thread that looks up after invalidate() returned sees
//    the new generation and then the new index (coherence, docs/design.md).
//  - Past its hit cache a thread probes the page hash (page_hash.h): one
//    cache line per small entry's page, a copy of what a hit returns, kept
//    by writers so that an entry leaves it before the generation moves. A
//    hit there needs no read section: it touches nothing that is freed.
//  - Past the page hash a thread searches the index (range_index.h), an
//    immutable structure published through one atomic pointer, inside a
//    read section: it writes the current epoch into its own record. Retired
//    index nodes and entries are freed by the reclaimer only once no record
//    shows an epoch old enough to have seen them.
//  - get() publishes the entry's id in one of the thread's hold slots
//    (hazard-pointer style) and re-checks the generation; the reclaimer
//    does not unpin an entry whose id is in any hold slot. Both store-load
//    orderings use the asymmetric fence (asymmetric_fence.h).
//
// Writers (misses, invalidate, eviction) serialize on one mutex that is
// never held across a backend pin. A pin that ran while an overlapping range
// was invalidated is discarded (invalidation log), and concurrent misses of
// overlapping ranges wait for the first pin instead of pinning twice.
//
// invalidate() only retires entries. unpin_retired() (a free, on its own
// thread) and drain_unpins() (the worker) unpin every retired entry nobody
// holds, in one backend call; drain_unpins() reports each unpin, whichever
// thread did it, with its delay from the invalidation.
#pragma once

#include "cache/prim/hot_path.h"

#include "cache/prim/asymmetric_fence.h"
#include "cache/registration/cache_stats.h"
#include "cache/registration/lru_list.h"
#include "cache/base/config.h"
#include "cache/registration/page_hash.h"
#include "cache/registration/pinned_range.h"
#include "cache/backends/pin_backend.h"
#include "cache/registration/range_index.h"
#include "cache/base/status.h"

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace gdrhook {

struct ThreadRecord;
struct CacheEntry;

// A registration held by get() until put(). Plain data: the public C API
// copies it into its opaque words.
struct HeldRegistration {
    Registration reg;
    ThreadRecord *record = nullptr; // hold slot owner, or
    CacheEntry *entry = nullptr;    // counted hold when all slots were taken
    uint32_t slot = 0;
};

// The allocation containing an address, as the hook's AllocTracker or the
// driver (cuMemGetAddressRange) knows it.
struct AllocationInfo {
    uint64_t base = 0;
    uint64_t size = 0;
    bool managed = false;
};

enum class UnpinReason : uint8_t { invalidated, evicted, merged, stale, revoked, teardown };
const char *to_string(UnpinReason reason);

// One unpin done by drain_unpins(), for the `unpin` event.
struct UnpinRecord {
    uint64_t id = 0;          // the cache entry's id (Registration::id)
    uint64_t addr = 0;
    uint64_t length = 0;
    uint64_t handle = 0;
    int32_t fd = -1;          // the number the fd had (closed now)
    uint64_t lat_ns = 0;      // from the invalidation (or eviction) to the unpin
    UnpinReason reason = UnpinReason::invalidated;
    Status status;            // the batch's backend result
};

struct CacheOptions {
    uint64_t max_bytes = 0;         // 0: no byte budget
    uint64_t max_entries = 65536;   // 0: no entry budget
    bool verify = false;            // cross-check every hit against buffer_id
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
    // lookup() returns it. May be empty.
    std::function<void(const Registration &reg)> on_pin;

    static CacheOptions from(const Config &config);
};

inline constexpr uint64_t cache_granule = 64 * 1024; // GPU BAR page
inline constexpr uint32_t hit_set_count = 512; // 64 KiB a thread: only the hot lines stay in L1
inline constexpr uint32_t hit_ways = 2; // 64 hot buffers span ~128 pages: 2 ways avoid conflicts
inline constexpr uint32_t hold_slot_count = 8;
// A hit-cache slot falls through to the index once every this many hits,
// which keeps the entry's LRU bit fresh without a write per hit.
inline constexpr uint32_t hit_refresh_period = 1024;

struct alignas(64) HitSlot { // one cache line a slot
    // In the form a hit hands out: copied out whole, in three 16-byte moves.
    Registration reg;
    uint64_t gen = 0;               // 0 never matches: the generation starts at 1
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
    bool owned = false;             // guarded by the cache's registry mutex
    ThreadRecord *next = nullptr;   // immutable once published
    std::array<HitSlot, hit_set_count * hit_ways> slots{}; // owner only
    // The entry id a set's last page-hash hit returned (owner only).
    std::array<uint64_t, hit_set_count> hash_seen{};
};

// Which record the calling thread uses in which cache (most recent first).
struct TlsBinding {
    uint64_t serial;
    ThreadRecord *record;
};
inline constexpr int tls_binding_count = 4;
extern thread_local TlsBinding tls_bindings[tls_binding_count]
    __attribute__((tls_model("initial-exec")));

class RegistrationCache
{
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

    // How many pins have started so far (see invalidate()).
    uint64_t pin_clock() const { return pin_starts_.load(std::memory_order_seq_cst); }

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

    // Unpins, on the calling thread, every retired entry nobody holds (a
    // held one waits for its put()); the next drain_unpins() reports them.
    // For a free, whose memory the driver keeps allocated while an export
    // of it is open: done before the free returns, as if never pinned.
    void unpin_retired() { reclaim(); }
    // Whether retired entries, or unpins not yet reported, wait for
    // drain_unpins().
    bool has_retired() const;

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

private:
    friend void release_thread_records_at_exit();

    ThreadRecord *this_thread_record();
    ThreadRecord *bind_thread();
    void release_record(ThreadRecord *record);

    void enter(ThreadRecord *record)
    {
        // release: pairs with the reclaimer's acquire, so what this thread
        // read in earlier sections happens before a free it allows.
        record->active.store(epoch_.load(std::memory_order_acquire), std::memory_order_release);
        light_fence(); // the store above is visible before the index is read
    }
    void leave(ThreadRecord *record) { record->active.store(0, std::memory_order_release); }

    static uint32_t set_index(uint64_t addr)
    {
        // The product's top log2(hit_set_count) bits: every set is used.
        static_assert((hit_set_count & (hit_set_count - 1)) == 0, "a power of two");
        constexpr int set_bits = __builtin_ctz(hit_set_count);
        return static_cast<uint32_t>(((addr >> 16) * 0x9E3779B97F4A7C15ull) >> (64 - set_bits));
    }
    // The thread's cached copy covering [addr, end) made in generation gen.
    static HitSlot *find_hit(ThreadRecord *record, uint64_t addr, uint64_t end, uint64_t gen)
    {
        HitSlot *set = &record->slots[set_index(addr) * hit_ways];
        for (uint32_t way = 0; way < hit_ways; ++way)
            if (set[way].gen == gen && set[way].covers(addr, end))
                return &set[way];
        return nullptr;
    }
    static uint64_t range_end(uint64_t addr, uint64_t length)
    {
        return addr + (length ? length : 1);
    }
    static void count(std::atomic<uint64_t> &counter)
    {
        // Owner-only counter: a plain load and store, no locked instruction.
        counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    static int free_hold_slot(ThreadRecord *record);

    // The rest of lookup() and get() once the thread's hit cache did not
    // answer: out of line, so that a hit is a few instructions with no
    // registers to save wherever lookup() and get() are inlined.
    GDRHOOK_NOINLINE Status lookup_past_hit_cache(ThreadRecord *record, uint64_t addr, uint64_t end,
                                                  uint64_t gen, HitSlot *slot, Registration &out);
    GDRHOOK_NOINLINE Status get_past_hit_cache(ThreadRecord *record, uint64_t addr, uint64_t end,
                                               uint64_t gen, HitSlot *slot, HeldRegistration &out);
    Status lookup_shared(ThreadRecord *record, uint64_t addr, uint64_t end, uint64_t gen,
                         Registration &out, HeldRegistration *held);
    Status miss(ThreadRecord *record, uint64_t addr, uint64_t end, Registration &out,
                HeldRegistration *held);
    bool verify_hit(ThreadRecord *record, uint64_t addr, const Registration &reg);
    void wake();
    void put_counted(CacheEntry *entry);

    // Writer side, mu_ held.
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
    // True when the range is in the index already (out, held filled);
    // else the plan is made and its range is pending.
    bool plan_pin_locked(std::unique_lock<std::mutex> &lock, ThreadRecord *record, uint64_t addr,
                         uint64_t end, Registration &out, HeldRegistration *held, PinPlan &plan);
    CacheEntry *new_entry_locked(const PinPlan &plan, Pin pin, uint64_t buffer_id);
    // Into the index, replacing what it merges and evicting for the
    // budgets; returns whether entries were retired (the worker must run).
    bool publish_entry_locked(CacheEntry *entry, ThreadRecord *record, uint64_t addr,
                              Registration &out, HeldRegistration *held);
    struct InvalidationRecord {
        uint64_t start = 0, end = 0;
        uint64_t started_up_to = 0; // concerns pins started up to this clock
    };
    // While any pin is in flight every free is logged here, whatever its
    // range; a pin that outlives a full lap cannot tell whether its range
    // was among them and pins again, and gives up after three. A thousand
    // frees during one pin wrapped 256 records (tests/cache); 4096 records
    // are 96 KiB per cache.
    static constexpr size_t invalidation_log_size = 4096;
    bool invalidated_since(uint64_t since, uint64_t start, uint64_t end,
                           uint64_t pin_started) const;
    void publish_locked(const std::vector<IndexItem> &removed, const IndexItem &inserted,
                        UnpinReason reason);
    void retire_locked(CacheEntry *entry, UnpinReason reason, uint64_t now);
    bool pick_victims_locked(uint64_t need_bytes, uint64_t need_entries,
                             std::vector<IndexItem> &victims);
    bool evict_for(uint64_t bytes);
    Status pin_with_eviction(uint64_t start, uint64_t end, Pin &pin);
    void fill_hit_slot(ThreadRecord *record, uint64_t addr, const IndexRecord &found,
                       uint64_t gen);
    // Verify mode checks every hit against the driver: it fills no slot,
    // so that a hit needs no test of the mode (a slot is never valid).
    void fill_hit_slot(ThreadRecord *record, uint64_t addr, const PageHashValue &found,
                       uint64_t gen)
    {
        if (verify_)
            return;
        HitSlot *set = &record->slots[set_index(addr) * hit_ways];
        // Most recent in way 0; the one it displaces moves to way 1.
        if (set[0].reg.id != found.id)
            set[1] = set[0];
        set[0] = HitSlot{Registration::of(found), gen, hit_refresh_period};
    }
    // A hit in the page hash: an expired hit-cache slot starts over (the
    // hash marked the entry referenced); an entry hit twice in a row in its
    // set is hot and gets a hit-cache slot. Random access pays one store
    // instead of a slot's copy.
    void note_hash_hit(ThreadRecord *record, uint64_t addr, const PageHashValue &value,
                       uint64_t gen, HitSlot *slot)
    {
        if (slot) {
            slot->uses = hit_refresh_period;
            return;
        }
        uint64_t &seen = record->hash_seen[set_index(addr)];
        if (seen == value.id)
            fill_hit_slot(record, addr, value, gen);
        else
            seen = value.id;
    }
    void hash_remove_locked(const std::vector<IndexItem> &removed);
    void hold_locked(ThreadRecord *record, CacheEntry *entry, HeldRegistration &held);

    // Reclaimer side.
    void reclaim();

    std::unique_ptr<PinBackend> backend_;
    CacheOptions options_;
    const uint64_t serial_;
    const bool verify_;

    // Read-mostly: every lookup reads these, writers change them rarely.
    alignas(64) std::atomic<const IndexRoot *> head_{nullptr};
    std::atomic<uint64_t> gen_{1};
    std::atomic<uint64_t> epoch_{1};
    std::atomic<uint32_t> pending_held_{0};
    std::atomic<ThreadRecord *> records_{nullptr};

    PageHash hash_; // its table pointer is read-mostly too; writers: mu_

    alignas(64) std::atomic<uint64_t> inflight_pins_{0};
    std::atomic<uint64_t> pin_starts_{0}; // written under mu_

    alignas(64) mutable std::mutex mu_;
    std::condition_variable pin_done_;
    std::vector<PendingPin> pending_;
    std::array<InvalidationRecord, invalidation_log_size> invalidation_log_{};
    uint64_t invalidation_seq_ = 0;
    LruList<CacheEntry> lru_; // front: most recently inserted or second-chanced
    uint64_t next_id_ = 1;
    uint64_t entries_ = 0;
    uint64_t index_bytes_ = 0;
    std::vector<CacheEntry *> retired_entries_;
    std::vector<std::pair<void *, uint64_t>> retired_nodes_; // block, epoch tag
    CacheStats locked_stats_;       // the fields writers count

    // Reclaimer: one at a time.
    mutable std::mutex reclaim_mu_;
    std::vector<CacheEntry *> considered_;
    std::vector<std::pair<void *, uint64_t>> nodes_waiting_;
    std::vector<UnpinRecord> reports_;
    std::atomic<uint64_t> unpins_{0}, unpin_failures_{0}, deferred_{0};
    std::atomic<uint64_t> bytes_pinned_{0}, peak_bytes_pinned_{0};
    std::atomic<uint64_t> verify_mismatches_{0};

    std::mutex registry_mu_;
};

inline ThreadRecord *RegistrationCache::this_thread_record()
{
    if (GDRHOOK_LIKELY(tls_bindings[0].serial == serial_))
        return tls_bindings[0].record;
    return bind_thread();
}

inline Status RegistrationCache::lookup(uint64_t addr, uint64_t length, Registration &out)
{
    const uint64_t end = range_end(addr, length);
    ThreadRecord *record = this_thread_record();
    // acquire: a thread that sees the generation an invalidation made also
    // sees the index it published before.
    const uint64_t gen = gen_.load(std::memory_order_acquire);
    HitSlot *slot = find_hit(record, addr, end, gen);
    if (GDRHOOK_LIKELY(slot && --slot->uses != 0)) {
        out = slot->reg;
        count(record->hits);
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
    const uint64_t gen = gen_.load(std::memory_order_acquire);
    HitSlot *found = find_hit(record, addr, end, gen);
    if (found) {
        const HitSlot &slot = *found;
        int h = free_hold_slot(record);
        if (h >= 0) {
            record->holds[h].store(slot.reg.id, std::memory_order_relaxed);
            // Hazard protocol: the hold is visible before we re-read the
            // generation; the reclaimer retires (gen moves) before it scans.
            light_fence();
            if (gen_.load(std::memory_order_acquire) == gen) {
                out.reg = slot.reg;
                out.record = record;
                out.slot = static_cast<uint32_t>(h);
                out.entry = nullptr;
                count(record->hits);
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
        light_fence();
        if (pending_held_.load(std::memory_order_relaxed))
            wake();
    } else if (held.entry) {
        put_counted(held.entry);
    }
    held = HeldRegistration{};
}

inline int RegistrationCache::free_hold_slot(ThreadRecord *record)
{
    for (uint32_t i = 0; i < hold_slot_count; ++i)
        if (record->holds[i].load(std::memory_order_relaxed) == 0)
            return static_cast<int>(i);
    return -1;
}

} // namespace gdrhook
