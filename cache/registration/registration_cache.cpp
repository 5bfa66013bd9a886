// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/registration/registration_cache.h"

#include "cache/base/clock.h"

#include <algorithm>
#include <new>

namespace gdrhook {

// One cached registration. The fields readers see are written before the
// entry is published and never change afterwards; the pin itself is only
// touched by writers (under mu_) and then the reclaimer.
struct CacheEntry {
    PinnedRange range;
    uint64_t pin_started = 0;            // pin_clock() when its pin began
    bool hashed = false;                 // in the page hash (mu_)

    std::atomic<uint32_t> refs{0};       // counted holds (hold slots full)

    CacheEntry *lru_prev = nullptr, *lru_next = nullptr; // mu_
    uint64_t retired_ns = 0;             // mu_, then the reclaimer
    uint64_t tag = 0;                    // epoch when retired
    UnpinReason reason = UnpinReason::invalidated;
    bool unpinned = false;
    Pin pin;
};

thread_local TlsBinding tls_bindings[tls_binding_count] __attribute__((tls_model("initial-exec")));

void release_thread_records_at_exit();

namespace {

std::atomic<uint64_t> next_serial{1};

// Live caches by serial, so that a thread's exit can hand its records back
// to caches that still exist (a binding may outlive its cache).
struct LiveCaches {
    std::mutex mutex;
    std::vector<std::pair<uint64_t, RegistrationCache *>> caches;
};
LiveCaches &live_caches()
{
    static auto *live = new LiveCaches(); // never destroyed: threads exit late
    return *live;
}

struct ThreadExit {
    ~ThreadExit() { release_thread_records_at_exit(); }
};
thread_local ThreadExit thread_exit;

uint64_t align_down(uint64_t value, uint64_t alignment) { return value / alignment * alignment; }
uint64_t align_up(uint64_t value, uint64_t alignment)
{
    return (value + alignment - 1) / alignment * alignment;
}

bool overlaps(uint64_t a_start, uint64_t a_end, uint64_t b_start, uint64_t b_end)
{
    return a_start < b_end && b_start < a_end;
}

} // namespace

void release_thread_records_at_exit()
{
    LiveCaches &live = live_caches();
    std::lock_guard<std::mutex> lock(live.mutex);
    for (TlsBinding &binding : tls_bindings) {
        if (!binding.serial)
            continue;
        for (auto &[serial, cache] : live.caches)
            if (serial == binding.serial)
                cache->release_record(binding.record);
        binding = TlsBinding{0, nullptr};
    }
}

const char *to_string(UnpinReason reason)
{
    switch (reason) {
    case UnpinReason::invalidated: return "invalidated";
    case UnpinReason::evicted: return "evicted";
    case UnpinReason::merged: return "merged";
    case UnpinReason::stale: return "stale";
    case UnpinReason::revoked: return "revoked";
    case UnpinReason::teardown: return "teardown";
    }
    return "?";
}

CacheOptions CacheOptions::from(const Config &config)
{
    CacheOptions options;
    options.max_bytes = config.cache_max_bytes;
    options.max_entries = config.cache_max_entries;
    options.verify = config.verify;
    return options;
}

RegistrationCache::RegistrationCache(std::unique_ptr<PinBackend> backend, CacheOptions options)
    : backend_(std::move(backend)), options_(std::move(options)),
      serial_(next_serial.fetch_add(1, std::memory_order_relaxed)), verify_(options_.verify),
      hash_(options_.max_entries)
{
    enable_asymmetric_fence();
    head_.store(index_empty(), std::memory_order_release);
    LiveCaches &live = live_caches();
    std::lock_guard<std::mutex> lock(live.mutex);
    live.caches.emplace_back(serial_, this);
}

RegistrationCache::~RegistrationCache()
{
    {
        LiveCaches &live = live_caches();
        std::lock_guard<std::mutex> lock(live.mutex);
        auto &c = live.caches;
        c.erase(std::remove_if(c.begin(), c.end(),
                               [this](const auto &p) { return p.second == this; }),
                c.end());
    }
    // Everything left is unpinned, held or not: the owner is going away.
    std::vector<CacheEntry *> all;
    index_for_each(head_.load(std::memory_order_relaxed),
                   [&all](const IndexItem &item) { all.push_back(item.entry); });
    all.insert(all.end(), retired_entries_.begin(), retired_entries_.end());
    all.insert(all.end(), considered_.begin(), considered_.end());
    std::vector<Pin> pins;
    for (CacheEntry *entry : all)
        if (!entry->unpinned)
            pins.push_back(std::move(entry->pin));
    if (!pins.empty())
        backend_->unpin(pins.data(), pins.size());
    for (CacheEntry *entry : all)
        delete entry;
    index_destroy(const_cast<IndexRoot *>(head_.load(std::memory_order_relaxed)));
    for (auto &node : retired_nodes_)
        index_free_block(node.first);
    for (auto &node : nodes_waiting_)
        index_free_block(node.first);
    for (ThreadRecord *r = records_.load(std::memory_order_relaxed); r;) {
        ThreadRecord *next = r->next;
        delete r;
        r = next;
    }
}

// --- threads -----------------------------------------------------------

ThreadRecord *RegistrationCache::bind_thread()
{
    (void)&thread_exit; // odr-use: registers the exit hook for this thread
    for (int i = 1; i < tls_binding_count; ++i) {
        if (tls_bindings[i].serial == serial_) {
            std::swap(tls_bindings[0], tls_bindings[i]);
            return tls_bindings[0].record;
        }
    }
    ThreadRecord *record = nullptr;
    {
        std::lock_guard<std::mutex> lock(registry_mu_);
        for (ThreadRecord *r = records_.load(std::memory_order_relaxed); r; r = r->next) {
            if (!r->owned) {
                record = r;
                break;
            }
        }
        if (!record) {
            record = new ThreadRecord();
            record->next = records_.load(std::memory_order_relaxed);
            // release: the reclaimer walks the list without the mutex.
            records_.store(record, std::memory_order_release);
        }
        record->owned = true;
        for (HitSlot &slot : record->slots)
            slot = HitSlot{}; // a previous owner's copies may name freed fds
    }
    // The least recently used binding makes room; its record stays owned by
    // this thread until it exits (bindings are few, caches are few).
    TlsBinding evicted = tls_bindings[tls_binding_count - 1];
    for (int i = tls_binding_count - 1; i > 0; --i)
        tls_bindings[i] = tls_bindings[i - 1];
    tls_bindings[0] = TlsBinding{serial_, record};
    if (evicted.serial) {
        LiveCaches &live = live_caches();
        std::lock_guard<std::mutex> lock(live.mutex);
        for (auto &[serial, cache] : live.caches)
            if (serial == evicted.serial)
                cache->release_record(evicted.record);
    }
    return record;
}

void RegistrationCache::release_record(ThreadRecord *record)
{
    std::lock_guard<std::mutex> lock(registry_mu_);
    record->owned = false;
}

// --- lookups -----------------------------------------------------------

// The index keeps a registration's range in its keys and the rest beside
// them (range_index.h): these two put them together and apart.
static PinnedRange range_of(const IndexRecord &found)
{
    const IndexValues &v = found.values;
    return PinnedRange{found.start, found.end, v.id, v.buffer_id, v.handle, v.fd};
}

static IndexItem item_of(CacheEntry *entry)
{
    const PinnedRange &r = entry->range;
    return IndexItem{r.start, r.end, entry, IndexValues{r.id, r.buffer_id, r.handle, r.fd}};
}

void RegistrationCache::fill_hit_slot(ThreadRecord *record, uint64_t addr,
                                      const IndexRecord &found, uint64_t gen)
{
    fill_hit_slot(record, addr, range_of(found), gen);
}

static void copy_out(const IndexRecord &found, Registration &out)
{
    out = Registration::of(range_of(found));
}

Status RegistrationCache::lookup_past_hit_cache(ThreadRecord *record, uint64_t addr, uint64_t end,
                                                uint64_t gen, HitSlot *slot, Registration &out)
{
    PageHashValue value;
    if (!verify_ && hash_.find(addr, end, value)) {
        out = Registration::of(value);
        note_hash_hit(record, addr, value, gen, slot);
        count(record->hits);
        return Status::success();
    }
    return lookup_shared(record, addr, end, gen, out, nullptr);
}

Status RegistrationCache::get_past_hit_cache(ThreadRecord *record, uint64_t addr, uint64_t end,
                                             uint64_t gen, HitSlot *slot, HeldRegistration &out)
{
    PageHashValue value;
    if (!verify_ && hash_.find(addr, end, value)) {
        int h = free_hold_slot(record);
        if (h >= 0) {
            // The hit-slot protocol: the entry was in the hash after gen was
            // read; if gen has not moved since the hold was published, the
            // reclaimer (which retires, moving gen, before it scans) sees it.
            record->holds[h].store(value.id, std::memory_order_relaxed);
            light_fence();
            if (gen_.load(std::memory_order_acquire) == gen) {
                out.reg = Registration::of(value);
                out.record = record;
                out.slot = static_cast<uint32_t>(h);
                out.entry = nullptr;
                note_hash_hit(record, addr, value, gen, slot);
                count(record->hits);
                return Status::success();
            }
            record->holds[h].store(0, std::memory_order_release);
        }
    }
    return lookup_shared(record, addr, end, gen, out.reg, &out);
}

Status RegistrationCache::lookup_shared(ThreadRecord *record, uint64_t addr, uint64_t end,
                                        uint64_t gen, Registration &out,
                                        HeldRegistration *held)
{
    for (int attempt = 0; attempt < 4; ++attempt) {
        enter(record);
        const IndexRecord *found = index_find(head_.load(std::memory_order_acquire), addr, end);
        CacheEntry *entry = found ? found->entry : nullptr;
        bool valid = entry != nullptr;
        if (entry) {
            copy_out(*found, out);
            if (!found->referenced.load(std::memory_order_relaxed))
                found->referenced.store(1, std::memory_order_relaxed);
            fill_hit_slot(record, addr, *found, gen);
            if (held) {
                int h = free_hold_slot(record);
                if (h >= 0) {
                    record->holds[h].store(found->values.id, std::memory_order_relaxed);
                    light_fence();
                    valid = gen_.load(std::memory_order_acquire) == gen;
                    if (valid) {
                        held->record = record;
                        held->slot = static_cast<uint32_t>(h);
                        held->entry = nullptr;
                    } else {
                        record->holds[h].store(0, std::memory_order_release);
                    }
                } else {
                    // seq_cst read-modify-write: a full fence on its own.
                    entry->refs.fetch_add(1, std::memory_order_seq_cst);
                    valid = gen_.load(std::memory_order_seq_cst) == gen;
                    if (valid) {
                        held->record = nullptr;
                        held->entry = entry;
                    } else {
                        // Still inside the read section: the entry is alive.
                        entry->refs.fetch_sub(1, std::memory_order_seq_cst);
                    }
                }
            }
        }
        leave(record);
        if (!entry)
            break;
        if (valid) {
            if (verify_ && !verify_hit(record, addr, out)) {
                if (held)
                    put(*held);
                break; // stale: the miss path pins the new allocation
            }
            count(record->hits);
            return Status::success();
        }
        // An invalidation ran meanwhile; look again with its generation.
        gen = gen_.load(std::memory_order_acquire);
    }
    count(record->misses);
    return miss(record, addr, end, out, held);
}

bool RegistrationCache::verify_hit(ThreadRecord *record, uint64_t addr, const Registration &reg)
{
    if (!options_.buffer_id)
        return true;
    count(record->verify_checks);
    uint64_t now = options_.buffer_id(addr);
    if (now == reg.buffer_id)
        return true;
    verify_mismatches_.fetch_add(1, std::memory_order_relaxed);
    if (options_.on_mismatch)
        options_.on_mismatch(addr, reg.buffer_id, now);
    // The cache missed an invalidation: drop the stale entry now.
    invalidate(reg.base, reg.length);
    return false;
}

// --- the miss path -------------------------------------------------------

bool RegistrationCache::invalidated_since(uint64_t since, uint64_t start, uint64_t end,
                                          uint64_t pin_started) const
{
    if (invalidation_seq_ - since > invalidation_log_size)
        return true; // the log wrapped: assume the worst, pin again
    for (uint64_t seq = since + 1; seq <= invalidation_seq_; ++seq) {
        const InvalidationRecord &r = invalidation_log_[seq % invalidation_log_size];
        if (overlaps(r.start, r.end, start, end) && pin_started <= r.started_up_to)
            return true;
    }
    return false;
}

void RegistrationCache::hold_locked(ThreadRecord *record, CacheEntry *entry,
                                    HeldRegistration &held)
{
    // Under mu_ nothing can retire the entry; the reclaimer takes mu_ after
    // we release it and so sees the hold.
    int h = free_hold_slot(record);
    if (h >= 0) {
        record->holds[h].store(entry->range.id, std::memory_order_release);
        held.record = record;
        held.slot = static_cast<uint32_t>(h);
        held.entry = nullptr;
    } else {
        entry->refs.fetch_add(1, std::memory_order_seq_cst);
        held.record = nullptr;
        held.entry = entry;
    }
}

// A miss: plan the pin (share one that exists or is under way, else
// register the range as pending), pin with no lock held, then publish the
// new entry unless its memory was freed meanwhile.
Status RegistrationCache::miss(ThreadRecord *record, uint64_t addr, uint64_t end,
                               Registration &out, HeldRegistration *held)
{
    AllocationInfo info;
    const bool known = options_.allocation_of && options_.allocation_of(addr, info) &&
                       info.size && info.base <= addr && end <= info.base + info.size;
    if (known && info.managed) {
        std::lock_guard<std::mutex> lock(mu_);
        ++locked_stats_.managed_refused;
        return Status::error(StatusCode::managed, 0, "managed memory is never pinned");
    }
    // The whole allocation where known, else the 64 KiB pages the request
    // touches; then what the backend needs.
    PinPlan plan;
    plan.want_start = known ? info.base : align_down(addr, cache_granule);
    plan.want_end = known ? info.base + info.size : align_up(end, cache_granule);
    plan.exact_tried = known;

    std::unique_lock<std::mutex> lock(mu_);
    for (int attempt = 0;; ++attempt) {
        if (plan_pin_locked(lock, record, addr, end, out, held, plan))
            return Status::success(); // pinned by another thread meanwhile
        lock.unlock();

        Pin pin;
        Status status = pin_with_eviction(plan.start, plan.stop, pin);
        uint64_t buffer_id = status.ok() && options_.buffer_id ? options_.buffer_id(addr) : 0;

        lock.lock();
        pending_.erase(std::find_if(pending_.begin(), pending_.end(), [&](const PendingPin &p) {
            return p.start == plan.start && p.end == plan.stop;
        }));
        pin_done_.notify_all();

        if (!status.ok()) {
            inflight_pins_.fetch_sub(1, std::memory_order_seq_cst);
            ++locked_stats_.pin_failures;
            if (status.code == StatusCode::invalid && !plan.exact_tried) {
                // 64 KiB rounding reached past the allocation: pin only the
                // pages asked for.
                plan.exact_tried = true;
                plan.want_start = addr;
                plan.want_end = end;
                continue;
            }
            return status;
        }
        ++locked_stats_.pins;
        CacheEntry *entry = new_entry_locked(plan, std::move(pin), buffer_id);

        if (invalidated_since(plan.invalidation_seq, plan.start, plan.stop, plan.pin_started)) {
            // The memory was freed while we pinned it: never publish this
            // pin; the reclaimer releases it.
            ++locked_stats_.stale_pins;
            retire_locked(entry, UnpinReason::stale, monotonic_ns());
            inflight_pins_.fetch_sub(1, std::memory_order_seq_cst);
            if (attempt >= 3)
                return Status::error(StatusCode::invalid, 0,
                                     "the range was freed while it was being pinned");
            continue;
        }

        const bool wake_worker = publish_entry_locked(entry, record, addr, out, held);
        lock.unlock();
        if (wake_worker)
            wake();
        if (options_.on_pin)
            options_.on_pin(out);
        return Status::success();
    }
}

bool RegistrationCache::plan_pin_locked(std::unique_lock<std::mutex> &lock, ThreadRecord *record,
                                        uint64_t addr, uint64_t end, Registration &out,
                                        HeldRegistration *held, PinPlan &plan)
{
    const uint64_t alignment = std::max<uint64_t>(backend_->alignment(), 1);
    for (;;) {
        const IndexRoot *root = head_.load(std::memory_order_relaxed);
        if (const IndexRecord *found = index_find(root, addr, end)) {
            // Pinned by another thread meanwhile: share its pin.
            copy_out(*found, out);
            fill_hit_slot(record, addr, *found, gen_.load(std::memory_order_relaxed));
            if (held)
                hold_locked(record, found->entry, *held);
            return true;
        }
        uint64_t start = align_down(plan.want_start, alignment);
        uint64_t stop = align_up(plan.want_end, alignment);
        bool busy = std::any_of(pending_.begin(), pending_.end(), [&](const PendingPin &p) {
            return overlaps(p.start, p.end, start, stop);
        });
        if (busy) {
            // One pin per range: wait for the one in flight, then look again.
            pin_done_.wait(lock);
            continue;
        }
        // Merge with entries the new range partially overlaps (ranges in
        // the index never overlap).
        std::vector<IndexItem> merged;
        index_overlapping(root, start, stop, merged);
        if (!merged.empty()) {
            start = std::min(start, merged.front().start);
            stop = std::max(stop, merged.back().end);
        }
        plan.start = start;
        plan.stop = stop;
        pending_.push_back({start, stop});
        plan.invalidation_seq = invalidation_seq_;
        plan.pin_started = pin_starts_.load(std::memory_order_relaxed) + 1;
        pin_starts_.store(plan.pin_started, std::memory_order_seq_cst);
        // seq_cst: invalidate()'s lock-free path reads this after the free
        // it guards; see there.
        inflight_pins_.fetch_add(1, std::memory_order_seq_cst);
        return false;
    }
}

CacheEntry *RegistrationCache::new_entry_locked(const PinPlan &plan, Pin pin, uint64_t buffer_id)
{
    auto *entry = new CacheEntry();
    entry->range.start = plan.start;
    entry->range.end = plan.stop;
    entry->range.id = next_id_++;
    entry->pin_started = plan.pin_started;
    entry->range.buffer_id = buffer_id;
    entry->range.fd = pin.fd.get();
    entry->range.handle = pin.handle;
    entry->pin = std::move(pin);
    const uint64_t size = plan.stop - plan.start;
    uint64_t now_pinned = bytes_pinned_.fetch_add(size, std::memory_order_relaxed) + size;
    uint64_t peak = peak_bytes_pinned_.load(std::memory_order_relaxed);
    while (now_pinned > peak &&
           !peak_bytes_pinned_.compare_exchange_weak(peak, now_pinned,
                                                     std::memory_order_relaxed)) {
    }
    return entry;
}

bool RegistrationCache::publish_entry_locked(CacheEntry *entry, ThreadRecord *record,
                                             uint64_t addr, Registration &out,
                                             HeldRegistration *held)
{
    const uint64_t start = entry->range.start, stop = entry->range.end, size = stop - start;
    // Publish: the new entry replaces what it merged; the budgets may
    // push the least recently used ones out.
    std::vector<IndexItem> removed;
    index_overlapping(head_.load(std::memory_order_relaxed), start, stop, removed);
    locked_stats_.merges += removed.size();
    uint64_t removed_bytes = 0;
    for (const IndexItem &item : removed)
        removed_bytes += item.end - item.start;
    size_t merged_count = removed.size();
    for (const IndexItem &item : removed) { // out of the LRU before picking victims
        CacheEntry *e = item.entry;
        lru_.unlink(e);
    }
    entries_ -= merged_count;
    index_bytes_ -= removed_bytes;
    uint64_t over_bytes = options_.max_bytes && index_bytes_ + size > options_.max_bytes
                              ? index_bytes_ + size - options_.max_bytes
                              : 0;
    uint64_t over_entries = options_.max_entries && entries_ + 1 > options_.max_entries
                                ? entries_ + 1 - options_.max_entries
                                : 0;
    std::vector<IndexItem> victims;
    if (over_bytes || over_entries)
        pick_victims_locked(over_bytes, over_entries, victims);
    locked_stats_.evictions += victims.size();
    removed.insert(removed.end(), victims.begin(), victims.end());

    std::vector<void *> retired;
    const IndexRoot *old = head_.load(std::memory_order_relaxed);
    const IndexItem inserted = item_of(entry);
    IndexRoot *fresh = index_rebuild(old, removed, inserted, retired);
    hash_remove_locked(removed); // before the generation moves
    head_.store(fresh, std::memory_order_release);
    // After the index has it (the hash holds only indexed entries), and
    // before inflight_pins_ drops (invalidate()'s lock-free path).
    entry->hashed = hash_.insert(entry->range);
    const uint64_t now = monotonic_ns();
    if (!removed.empty()) {
        gen_.fetch_add(1, std::memory_order_seq_cst);
        for (size_t i = 0; i < removed.size(); ++i) {
            CacheEntry *e = removed[i].entry;
            if (i >= merged_count) { // victims are still linked
                lru_.unlink(e);
                --entries_;
                index_bytes_ -= e->range.end - e->range.start;
            }
            retire_locked(e, i < merged_count ? UnpinReason::merged : UnpinReason::evicted,
                          now);
        }
    }
    const uint64_t tag = epoch_.load(std::memory_order_relaxed);
    for (void *block : retired)
        retired_nodes_.emplace_back(block, tag);

    lru_.push_front(entry);
    ++entries_;
    index_bytes_ += size;
    inflight_pins_.fetch_sub(1, std::memory_order_seq_cst);

    IndexRecord published;
    published.start = inserted.start;
    published.end = inserted.end;
    published.entry = entry;
    published.values = inserted.values;
    copy_out(published, out);
    fill_hit_slot(record, addr, published, gen_.load(std::memory_order_relaxed));
    if (held)
        hold_locked(record, entry, *held);
    return !removed.empty();
}

void RegistrationCache::retire_locked(CacheEntry *entry, UnpinReason reason, uint64_t now)
{
    entry->retired_ns = now;
    entry->reason = reason;
    entry->tag = epoch_.load(std::memory_order_relaxed);
    retired_entries_.push_back(entry);
}

bool RegistrationCache::pick_victims_locked(uint64_t need_bytes, uint64_t need_entries,
                                            std::vector<IndexItem> &victims)
{
    // Second chance: an entry hit since it was last looked at here moves to
    // the front once instead of leaving. Two passes at most.
    uint64_t got_bytes = 0, got_entries = 0;
    size_t budget = 2 * entries_ + 1;
    CacheEntry *e = lru_.back();
    while (e && budget-- && (got_bytes < need_bytes || got_entries < need_entries)) {
        CacheEntry *prev = e->lru_prev;
        const IndexRecord *record =
            index_find(head_.load(std::memory_order_relaxed), e->range.start, e->range.start + 1);
        // Hits through the page hash mark the entry there.
        const bool hash_referenced = e->hashed && hash_.take_referenced(e->range.start, e->range.end, e->range.id);
        if (record && (hash_referenced || record->referenced.load(std::memory_order_relaxed)) &&
            budget > entries_) {
            record->referenced.store(0, std::memory_order_relaxed);
            lru_.move_to_front(e);
            e = prev ? prev : lru_.back();
            continue;
        }
        bool chosen = std::any_of(victims.begin(), victims.end(),
                                  [e](const IndexItem &v) { return v.entry == e; });
        if (!chosen) {
            victims.push_back({e->range.start, e->range.end, e});
            got_bytes += e->range.end - e->range.start;
            ++got_entries;
        }
        e = prev;
    }
    return !victims.empty();
}

bool RegistrationCache::evict_for(uint64_t bytes)
{
    std::unique_lock<std::mutex> lock(mu_);
    std::vector<IndexItem> victims;
    if (!pick_victims_locked(bytes, 1, victims))
        return false;
    std::sort(victims.begin(), victims.end(),
              [](const IndexItem &a, const IndexItem &b) { return a.start < b.start; });
    locked_stats_.evictions += victims.size();
    publish_locked(victims, IndexItem{0, 0, nullptr}, UnpinReason::evicted);
    return true;
}

void RegistrationCache::hash_remove_locked(const std::vector<IndexItem> &removed)
{
    for (const IndexItem &item : removed) {
        CacheEntry *e = item.entry;
        if (e->hashed) {
            hash_.remove(e->range.start, e->range.end, e->range.id);
            e->hashed = false;
        }
    }
}

void RegistrationCache::publish_locked(const std::vector<IndexItem> &removed,
                                       const IndexItem &inserted, UnpinReason reason)
{
    std::vector<void *> retired;
    IndexRoot *fresh =
        index_rebuild(head_.load(std::memory_order_relaxed), removed, inserted, retired);
    hash_remove_locked(removed); // before the generation moves
    // release: readers that load the new root see complete leaves.
    head_.store(fresh, std::memory_order_release);
    // After the new index: a reader that sees this generation finds no
    // removed entry, and its stale hit-cache copies stop matching.
    gen_.fetch_add(1, std::memory_order_seq_cst);
    const uint64_t now = monotonic_ns();
    const uint64_t tag = epoch_.load(std::memory_order_relaxed);
    for (void *block : retired)
        retired_nodes_.emplace_back(block, tag);
    for (const IndexItem &item : removed) {
        CacheEntry *e = item.entry;
        lru_.unlink(e);
        --entries_;
        index_bytes_ -= e->range.end - e->range.start;
        retire_locked(e, reason, now);
    }
}

Status RegistrationCache::pin_with_eviction(uint64_t start, uint64_t end, Pin &pin)
{
    for (int round = 0;; ++round) {
        Status status = backend_->pin(start, end - start, pin);
        if (status.code != StatusCode::no_space || round == 4)
            return status;
        // Out of BAR space: make room from the least recently used entries
        // and release them now, on this thread, then try again.
        if (!evict_for(end - start))
            return status;
        {
            std::lock_guard<std::mutex> lock(mu_);
            ++locked_stats_.no_space_retries;
        }
        reclaim();
    }
}

// --- invalidation --------------------------------------------------------

size_t RegistrationCache::invalidate(uint64_t addr, uint64_t length, uint64_t started_up_to)
{
    const uint64_t end = range_end(addr, length);
    // Lock-free when there is nothing to do. A pin that starts after this
    // read works on memory that is either still allocated (this is the
    // call before the real free: the call after it catches the pin) or
    // already freed (the pin fails).
    if (inflight_pins_.load(std::memory_order_seq_cst) == 0) {
        ThreadRecord *record = this_thread_record();
        enter(record);
        bool any = index_overlaps(head_.load(std::memory_order_acquire), addr, end);
        leave(record);
        if (!any)
            return 0;
    }
    std::unique_lock<std::mutex> lock(mu_);
    // Pins in flight learn about this range when they come back.
    ++invalidation_seq_;
    invalidation_log_[invalidation_seq_ % invalidation_log_size] = {addr, end, started_up_to};
    std::vector<IndexItem> removed;
    index_overlapping(head_.load(std::memory_order_relaxed), addr, end, removed);
    removed.erase(std::remove_if(removed.begin(), removed.end(),
                                 [started_up_to](const IndexItem &item) {
                                     return item.entry->pin_started > started_up_to;
                                 }),
                  removed.end());
    if (removed.empty())
        return 0;
    locked_stats_.invalidated += removed.size();
    publish_locked(removed, IndexItem{0, 0, nullptr}, UnpinReason::invalidated);
    return removed.size();
}

std::vector<Registration> RegistrationCache::revoke(const std::vector<uint64_t> &backend_handles)
{
    std::vector<Registration> revoked;
    if (backend_handles.empty())
        return revoked;
    std::vector<uint64_t> wanted(backend_handles);
    std::sort(wanted.begin(), wanted.end());
    std::vector<IndexItem> removed;
    {
        std::lock_guard<std::mutex> lock(mu_);
        index_for_each(head_.load(std::memory_order_relaxed), [&](const IndexItem &item) {
            if (item.entry->range.handle &&
                std::binary_search(wanted.begin(), wanted.end(), item.entry->range.handle))
                removed.push_back(item);
        });
        if (removed.empty())
            return revoked;
        locked_stats_.revoked += removed.size();
        publish_locked(removed, IndexItem{0, 0, nullptr}, UnpinReason::revoked);
    }
    for (const IndexItem &item : removed)
        revoked.push_back(Registration::of(item.entry->range));
    return revoked;
}

size_t RegistrationCache::retire_all()
{
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<IndexItem> all;
    index_for_each(head_.load(std::memory_order_relaxed),
                   [&all](const IndexItem &item) { all.push_back(item); });
    if (!all.empty())
        publish_locked(all, IndexItem{0, 0, nullptr}, UnpinReason::teardown);
    return all.size();
}

// --- reclamation -----------------------------------------------------------

void RegistrationCache::wake()
{
    if (options_.wakeup)
        options_.wakeup();
}

void RegistrationCache::put_counted(CacheEntry *entry)
{
    // The entry may be freed right after this decrement: touch it no more.
    entry->refs.fetch_sub(1, std::memory_order_seq_cst);
    if (pending_held_.load(std::memory_order_seq_cst))
        wake();
}

bool RegistrationCache::has_retired() const
{
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (!retired_entries_.empty())
            return true;
    }
    std::lock_guard<std::mutex> lock(reclaim_mu_);
    return !reports_.empty() || std::any_of(considered_.begin(), considered_.end(),
                                            [](const CacheEntry *e) { return !e->unpinned; });
}

void RegistrationCache::reclaim()
{
    std::lock_guard<std::mutex> reclaim_lock(reclaim_mu_);
    {
        std::lock_guard<std::mutex> lock(mu_);
        considered_.insert(considered_.end(), retired_entries_.begin(), retired_entries_.end());
        retired_entries_.clear();
        nodes_waiting_.insert(nodes_waiting_.end(), retired_nodes_.begin(), retired_nodes_.end());
        retired_nodes_.clear();
    }
    // A free unpins on its own thread (unpin_retired()): the worker's drain
    // after it finds nothing, and skips the fence's system call.
    if (considered_.empty() && nodes_waiting_.empty())
        return;
    // Everything collected carries a tag at most the epoch before this bump.
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    bool waiting = std::any_of(considered_.begin(), considered_.end(),
                               [](const CacheEntry *e) { return !e->unpinned; });
    if (waiting)
        pending_held_.store(1, std::memory_order_seq_cst);
    // Readers' read-section words and holds written before this point are
    // visible below; readers that start after it see the retirements.
    heavy_fence();

    uint64_t oldest_reader = UINT64_MAX;
    std::vector<uint64_t> held;
    for (ThreadRecord *r = records_.load(std::memory_order_acquire); r; r = r->next) {
        uint64_t active = r->active.load(std::memory_order_acquire);
        if (active)
            oldest_reader = std::min(oldest_reader, active);
        for (auto &hold : r->holds)
            if (uint64_t id = hold.load(std::memory_order_acquire))
                held.push_back(id);
    }
    std::sort(held.begin(), held.end());

    std::vector<Pin> pins;
    std::vector<CacheEntry *> batch;
    bool still_held = false;
    for (CacheEntry *e : considered_) {
        if (e->unpinned)
            continue;
        if (std::binary_search(held.begin(), held.end(), e->range.id) ||
            e->refs.load(std::memory_order_acquire) != 0) {
            still_held = true;
            deferred_.fetch_add(1, std::memory_order_relaxed);
            continue;
        }
        pins.push_back(std::move(e->pin));
        e->unpinned = true;
        batch.push_back(e);
    }
    if (!still_held)
        pending_held_.store(0, std::memory_order_relaxed);

    if (!pins.empty()) {
        Status status = backend_->unpin(pins.data(), pins.size());
        const uint64_t now = monotonic_ns();
        uint64_t bytes = 0;
        for (CacheEntry *e : batch) {
            UnpinRecord record;
            record.id = e->range.id;
            record.addr = e->range.start;
            record.length = e->range.end - e->range.start;
            record.handle = e->range.handle;
            record.fd = e->range.fd;
            record.lat_ns = now > e->retired_ns ? now - e->retired_ns : 0;
            record.reason = e->reason;
            record.status = status;
            reports_.push_back(record);
            bytes += e->range.end - e->range.start;
        }
        {
            // Together, as a pin adds to both: see pinned_now().
            std::lock_guard<std::mutex> lock(mu_);
            bytes_pinned_.fetch_sub(bytes, std::memory_order_relaxed);
            unpins_.fetch_add(batch.size(), std::memory_order_relaxed);
        }
        if (!status.ok())
            unpin_failures_.fetch_add(1, std::memory_order_relaxed);
    }

    // Memory no reader can still reach: tagged before the oldest section.
    auto reachable = [oldest_reader](uint64_t tag) { return tag >= oldest_reader; };
    auto keep = std::remove_if(considered_.begin(), considered_.end(), [&](CacheEntry *e) {
        if (!e->unpinned || reachable(e->tag))
            return false;
        delete e;
        return true;
    });
    considered_.erase(keep, considered_.end());
    auto keep_nodes = std::remove_if(nodes_waiting_.begin(), nodes_waiting_.end(),
                                     [&](const std::pair<void *, uint64_t> &node) {
                                         if (reachable(node.second))
                                             return false;
                                         index_free_block(node.first);
                                         return true;
                                     });
    nodes_waiting_.erase(keep_nodes, nodes_waiting_.end());
}

size_t RegistrationCache::drain_unpins(const std::function<void(const UnpinRecord &)> &report)
{
    reclaim();
    std::vector<UnpinRecord> done;
    {
        std::lock_guard<std::mutex> lock(reclaim_mu_);
        done.swap(reports_);
    }
    if (report)
        for (const UnpinRecord &record : done)
            report(record);
    return done.size();
}

// --- statistics and fork ----------------------------------------------------

CacheStats RegistrationCache::stats() const
{
    CacheStats s;
    {
        std::lock_guard<std::mutex> lock(mu_);
        s = locked_stats_;
        s.entries = entries_;
    }
    for (ThreadRecord *r = records_.load(std::memory_order_acquire); r; r = r->next) {
        s.hits += r->hits.load(std::memory_order_relaxed);
        s.misses += r->misses.load(std::memory_order_relaxed);
        s.verify_checks += r->verify_checks.load(std::memory_order_relaxed);
    }
    s.unpins = unpins_.load(std::memory_order_relaxed);
    s.unpin_failures = unpin_failures_.load(std::memory_order_relaxed);
    s.unpins_deferred = deferred_.load(std::memory_order_relaxed);
    s.bytes_pinned = bytes_pinned_.load(std::memory_order_relaxed);
    s.peak_bytes_pinned = peak_bytes_pinned_.load(std::memory_order_relaxed);
    s.verify_mismatches = verify_mismatches_.load(std::memory_order_relaxed);
    return s;
}

PinnedNow RegistrationCache::pinned_now() const
{
    std::lock_guard<std::mutex> lock(mu_);
    return {locked_stats_.pins - unpins_.load(std::memory_order_relaxed),
            bytes_pinned_.load(std::memory_order_relaxed)};
}

size_t RegistrationCache::size() const
{
    std::lock_guard<std::mutex> lock(mu_);
    return entries_;
}

void RegistrationCache::after_fork_in_child()
{
    new (&mu_) std::mutex();
    new (&reclaim_mu_) std::mutex();
    new (&registry_mu_) std::mutex();
    new (&pin_done_) std::condition_variable();
    new (&live_caches().mutex) std::mutex();
    pending_.clear();
    inflight_pins_.store(0, std::memory_order_relaxed);
    ThreadRecord *mine = tls_bindings[0].serial == serial_ ? tls_bindings[0].record : nullptr;
    for (ThreadRecord *r = records_.load(std::memory_order_relaxed); r; r = r->next) {
        if (r == mine)
            continue;
        r->owned = false;
        r->active.store(0, std::memory_order_relaxed);
        for (auto &hold : r->holds)
            hold.store(0, std::memory_order_relaxed);
    }
}

} // namespace gdrhook
