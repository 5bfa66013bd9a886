// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/registration/cache_writer.h"

#include "cache/base/clock.h"
#include "cache/events/event_clock.h"

#include <algorithm>
#include <cerrno>
#include <new>
#include <utility>

namespace gdrhook {

namespace {

uint64_t align_down(uint64_t value, uint64_t alignment)
{
    return value / alignment * alignment;
}
uint64_t align_up(uint64_t value, uint64_t alignment)
{
    return (value + alignment - 1) / alignment * alignment;
}

bool overlaps(uint64_t a_start, uint64_t a_end, uint64_t b_start, uint64_t b_end)
{
    return a_start < b_end && b_start < a_end;
}

} // namespace

CacheWriter::CacheWriter(PinBackend &backend, const CacheOptions &options,
                         PublishedState &published, std::function<void()> reclaim_now)
    : backend_(backend), options_(options), published_(published), hit_cache_(options.verify),
      reclaim_now_(std::move(reclaim_now))
{}

// --- the miss path -------------------------------------------------------

bool InvalidationLog::invalidated_since(uint64_t since, uint64_t start, uint64_t end,
                                        uint64_t pin_started) const
{
    if (seq_ - since > size)
        return true; // the log wrapped: assume the worst, pin again
    for (uint64_t seq = since + 1; seq <= seq_; ++seq) {
        const Record &r = records_[seq % size];
        if (overlaps(r.start, r.end, start, end) && pin_started <= r.started_up_to)
            return true;
    }
    return false;
}

void CacheWriter::hold_locked(ThreadRecord *record, CacheEntry *entry, HeldRegistration &held)
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
Status CacheWriter::miss(ThreadRecord *record, uint64_t addr, uint64_t end, Registration &out,
                         HeldRegistration *held)
{
    AllocationInfo info;
    const bool known = options_.allocation_of && options_.allocation_of(addr, info) && info.size &&
                       info.base <= addr && end <= info.base + info.size;
    if (known && info.managed) {
        std::lock_guard<SpinThenSleepMutex> lock(mu_);
        ++locked_stats_.managed_refused;
        return Status::error(StatusCode::managed, 0, "managed memory is never pinned");
    }
    // The whole allocation where known, else the 64 KiB pages the request
    // touches; then what the backend needs.
    PinPlan plan;
    plan.want_start = known ? info.base : align_down(addr, cache_granule);
    plan.want_end = known ? info.base + info.size : align_up(end, cache_granule);
    plan.exact_tried = known;

    std::unique_lock<SpinThenSleepMutex> lock(mu_);
    for (int attempt = 0;; ++attempt) {
        if (plan_pin_locked(lock, record, addr, end, out, held, plan))
            return Status::success(); // pinned by another thread meanwhile
        lock.unlock();

        Pin pin;
        const uint64_t pin_began = queued_time_now(); // the `pin` line's time
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

        if (invalidations_.invalidated_since(plan.invalidation_seq, plan.start, plan.stop,
                                             plan.pin_started)) {
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
            options_.on_pin(out, pin_began);
        return Status::success();
    }
}

bool CacheWriter::plan_pin_locked(std::unique_lock<SpinThenSleepMutex> &lock, ThreadRecord *record,
                                  uint64_t addr, uint64_t end, Registration &out,
                                  HeldRegistration *held, PinPlan &plan)
{
    const uint64_t alignment = std::max<uint64_t>(backend_.alignment(), 1);
    for (;;) {
        const IndexRoot *root = published_.head.load(std::memory_order_relaxed);
        if (const IndexRecord *found = index_find(root, addr, end)) {
            // Pinned by another thread meanwhile: share its pin.
            out = Registration::of(range_of(*found));
            hit_cache_.fill(record, addr, range_of(*found),
                            published_.gen.load(std::memory_order_relaxed));
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
        plan.invalidation_seq = invalidations_.seq();
        plan.pin_started = pin_starts_.load(std::memory_order_relaxed) + 1;
        pin_starts_.store(plan.pin_started, std::memory_order_seq_cst);
        // seq_cst: invalidate()'s lock-free path reads this after the free
        // it guards; see there.
        inflight_pins_.fetch_add(1, std::memory_order_seq_cst);
        return false;
    }
}

CacheEntry *CacheWriter::new_entry_locked(const PinPlan &plan, Pin pin, uint64_t buffer_id)
{
    auto *entry = new CacheEntry();
    entry->range.start = plan.start;
    entry->range.end = plan.stop;
    entry->range.id = next_id_++;
    entry->pin_started = plan.pin_started;
    entry->range.buffer_id = buffer_id;
    entry->range.fd = pin.fd.get();
    entry->range.handle = pin.handle;
    entry->range.peer_setup_deferred = pin.peer_setup_deferred;
    entry->pin = std::move(pin);
    const uint64_t size = plan.stop - plan.start;
    uint64_t now_pinned = bytes_pinned_.fetch_add(size, std::memory_order_relaxed) + size;
    uint64_t peak = peak_bytes_pinned_.load(std::memory_order_relaxed);
    while (now_pinned > peak &&
           !peak_bytes_pinned_.compare_exchange_weak(peak, now_pinned, std::memory_order_relaxed)) {
    }
    return entry;
}

bool CacheWriter::publish_entry_locked(CacheEntry *entry, ThreadRecord *record, uint64_t addr,
                                       Registration &out, HeldRegistration *held)
{
    const uint64_t start = entry->range.start, stop = entry->range.end, size = stop - start;
    // Publish: the new entry replaces what it merged; the budgets may
    // push the least recently used ones out.
    std::vector<IndexItem> removed;
    index_overlapping(published_.head.load(std::memory_order_relaxed), start, stop, removed);
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
    const IndexRoot *old = published_.head.load(std::memory_order_relaxed);
    const IndexItem inserted = item_of(entry);
    IndexRoot *fresh = index_rebuild(old, removed, inserted, retired);
    hash_remove_locked(removed); // before the generation moves
    published_.head.store(fresh, std::memory_order_release);
    // After the index has it (the hash holds only indexed entries), and
    // before inflight_pins_ drops (invalidate()'s lock-free path).
    entry->hashed = published_.hash.insert(entry->range);
    const uint64_t now = monotonic_ns();
    if (!removed.empty()) {
        published_.gen.fetch_add(1, std::memory_order_seq_cst);
        for (size_t i = 0; i < removed.size(); ++i) {
            CacheEntry *e = removed[i].entry;
            if (i >= merged_count) { // victims are still linked
                lru_.unlink(e);
                --entries_;
                index_bytes_ -= e->range.end - e->range.start;
            }
            retire_locked(e, i < merged_count ? UnpinReason::merged : UnpinReason::evicted, now);
        }
    }
    const uint64_t tag = published_.epoch.load(std::memory_order_relaxed);
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
    out = Registration::of(range_of(published));
    hit_cache_.fill(record, addr, range_of(published),
                    published_.gen.load(std::memory_order_relaxed));
    if (held)
        hold_locked(record, entry, *held);
    return !removed.empty();
}

void CacheWriter::retire_locked(CacheEntry *entry, UnpinReason reason, uint64_t now)
{
    entry->retired_ns = now;
    entry->reason = reason;
    entry->tag = published_.epoch.load(std::memory_order_relaxed);
    retired_entries_.push_back(entry);
}

bool CacheWriter::pick_victims_locked(uint64_t need_bytes, uint64_t need_entries,
                                      std::vector<IndexItem> &victims)
{
    // Second chance: an entry hit since it was last looked at here moves to
    // the front once instead of leaving. Two passes at most.
    uint64_t got_bytes = 0, got_entries = 0;
    size_t budget = 2 * entries_ + 1;
    CacheEntry *e = lru_.back();
    while (e && budget-- && (got_bytes < need_bytes || got_entries < need_entries)) {
        CacheEntry *prev = e->lru_prev;
        const IndexRecord *record = index_find(published_.head.load(std::memory_order_relaxed),
                                               e->range.start, e->range.start + 1);
        // Hits through the page hash mark the entry there.
        const bool hash_referenced =
            e->hashed && published_.hash.take_referenced(e->range.start, e->range.end, e->range.id);
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

bool CacheWriter::evict_for(uint64_t bytes, uint64_t entries, UnpinReason reason)
{
    std::unique_lock<SpinThenSleepMutex> lock(mu_);
    std::vector<IndexItem> victims;
    if (!pick_victims_locked(bytes, entries, victims))
        return false;
    std::sort(victims.begin(), victims.end(),
              [](const IndexItem &a, const IndexItem &b) { return a.start < b.start; });
    locked_stats_.evictions += victims.size();
    publish_locked(victims, IndexItem{0, 0, nullptr}, reason);
    return true;
}

// Made and not yet unpinned, this thread's pin in flight left out: what
// the index holds, what waits retired (held, or not yet reclaimed) and the
// other threads' pins under way.
uint64_t CacheWriter::descriptors_held() const
{
    std::lock_guard<SpinThenSleepMutex> lock(mu_);
    const uint64_t alive = locked_stats_.pins - unpins_.load(std::memory_order_relaxed);
    const uint64_t others_in_flight = inflight_pins_.load(std::memory_order_relaxed) - 1;
    return alive + others_in_flight;
}

bool CacheWriter::room_for_a_descriptor()
{
    if (!options_.max_descriptors)
        return true;
    // Retired pins nobody holds go first, then the least recently used
    // pins leave the index (twice: the first pass may give recently hit
    // ones their second chance); each is unpinned here, before the pin
    // that needs its descriptor, and the worker logs it (reason fd_budget).
    for (int round = 0; round < 3; ++round) {
        const uint64_t held = descriptors_held();
        if (held < options_.max_descriptors)
            return true;
        if (round > 0)
            evict_for(0, held + 1 - options_.max_descriptors, UnpinReason::fd_budget);
        reclaim_now_();
        wake();
    }
    return descriptors_held() < options_.max_descriptors;
}

void CacheWriter::hash_remove_locked(const std::vector<IndexItem> &removed)
{
    for (const IndexItem &item : removed) {
        CacheEntry *e = item.entry;
        if (e->hashed) {
            published_.hash.remove(e->range.start, e->range.end, e->range.id);
            e->hashed = false;
        }
    }
}

void CacheWriter::publish_locked(const std::vector<IndexItem> &removed, const IndexItem &inserted,
                                 UnpinReason reason, uint64_t claim)
{
    std::vector<void *> retired;
    IndexRoot *fresh =
        index_rebuild(published_.head.load(std::memory_order_relaxed), removed, inserted, retired);
    hash_remove_locked(removed); // before the generation moves
    // release: readers that load the new root see complete leaves.
    published_.head.store(fresh, std::memory_order_release);
    // After the new index: a reader that sees this generation finds no
    // removed entry, and its stale hit-cache copies stop matching.
    published_.gen.fetch_add(1, std::memory_order_seq_cst);
    const uint64_t now = monotonic_ns();
    const uint64_t tag = published_.epoch.load(std::memory_order_relaxed);
    for (void *block : retired)
        retired_nodes_.emplace_back(block, tag);
    for (const IndexItem &item : removed) {
        CacheEntry *e = item.entry;
        lru_.unlink(e);
        --entries_;
        index_bytes_ -= e->range.end - e->range.start;
        retire_locked(e, reason, now);
        e->claimed_by = claim;
    }
}

Status CacheWriter::pin_with_eviction(uint64_t start, uint64_t end, Pin &pin)
{
    if (!room_for_a_descriptor())
        return Status::error(StatusCode::no_descriptors, EMFILE,
                             "every descriptor of the dma-buf pins' budget is held by a pin in "
                             "use: nothing pinned");
    for (int round = 0;; ++round) {
        Status status = backend_.pin(start, end - start, pin);
        if (status.code != StatusCode::no_space || round == 4)
            return status;
        // Out of BAR space: make room from the least recently used entries
        // and release them now, on this thread, then try again.
        if (!evict_for(end - start, 1, UnpinReason::evicted))
            return status;
        {
            std::lock_guard<SpinThenSleepMutex> lock(mu_);
            ++locked_stats_.no_space_retries;
        }
        reclaim_now_();
    }
}

// --- invalidation --------------------------------------------------------

size_t CacheWriter::invalidate(ThreadRecords &records, uint64_t addr, uint64_t end,
                               uint64_t started_up_to, bool claim)
{
    // Lock-free when there is nothing to do. A pin that starts after this
    // read works on memory that is either still allocated (this is the
    // call before the real free: the call after it catches the pin) or
    // already freed (the pin fails).
    if (inflight_pins_.load(std::memory_order_seq_cst) == 0) {
        ThreadRecord *record = records.mine();
        published_.enter(record);
        bool any = index_overlaps(published_.head.load(std::memory_order_acquire), addr, end);
        PublishedState::leave(record);
        if (!any)
            return 0;
    }
    std::unique_lock<SpinThenSleepMutex> lock(mu_);
    // Pins in flight learn about this range when they come back.
    invalidations_.record(addr, end, started_up_to);
    std::vector<IndexItem> removed;
    index_overlapping(published_.head.load(std::memory_order_relaxed), addr, end, removed);
    removed.erase(std::remove_if(removed.begin(), removed.end(),
                                 [started_up_to](const IndexItem &item) {
                                     return item.entry->pin_started > started_up_to;
                                 }),
                  removed.end());
    if (removed.empty())
        return 0;
    // The claim is looked up only here, where the free retires something.
    locked_stats_.invalidated += removed.size();
    publish_locked(removed, IndexItem{0, 0, nullptr}, UnpinReason::invalidated,
                   claim ? this_threads_claim() : 0);
    return removed.size();
}

std::vector<Registration> CacheWriter::revoke(const std::vector<uint64_t> &backend_handles)
{
    std::vector<Registration> revoked;
    if (backend_handles.empty())
        return revoked;
    std::vector<uint64_t> wanted(backend_handles);
    std::sort(wanted.begin(), wanted.end());
    std::vector<IndexItem> removed;
    {
        std::lock_guard<SpinThenSleepMutex> lock(mu_);
        index_for_each(published_.head.load(std::memory_order_relaxed), [&](const IndexItem &item) {
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

size_t CacheWriter::retire_all()
{
    std::lock_guard<SpinThenSleepMutex> lock(mu_);
    std::vector<IndexItem> all;
    index_for_each(published_.head.load(std::memory_order_relaxed),
                   [&all](const IndexItem &item) { all.push_back(item); });
    if (!all.empty())
        publish_locked(all, IndexItem{0, 0, nullptr}, UnpinReason::teardown);
    return all.size();
}

// --- the reclaimer's hand-over, counts and fork ------------------------------

void CacheWriter::wake() const
{
    if (options_.wakeup)
        options_.wakeup();
}

void CacheWriter::take_retired(std::vector<CacheEntry *> &entries, std::vector<RetiredNode> &nodes)
{
    std::lock_guard<SpinThenSleepMutex> lock(mu_);
    entries.insert(entries.end(), retired_entries_.begin(), retired_entries_.end());
    retired_entries_.clear();
    nodes.insert(nodes.end(), retired_nodes_.begin(), retired_nodes_.end());
    retired_nodes_.clear();
}

bool CacheWriter::has_retired() const
{
    std::lock_guard<SpinThenSleepMutex> lock(mu_);
    return !retired_entries_.empty();
}

void CacheWriter::count_unpins(size_t count, uint64_t bytes)
{
    // Together, as a pin adds to both: see pinned_now().
    std::lock_guard<SpinThenSleepMutex> lock(mu_);
    bytes_pinned_.fetch_sub(bytes, std::memory_order_relaxed);
    unpins_.fetch_add(count, std::memory_order_relaxed);
}

std::vector<CacheEntry *> CacheWriter::indexed_entries() const
{
    std::vector<CacheEntry *> all;
    index_for_each(published_.head.load(std::memory_order_relaxed),
                   [&all](const IndexItem &item) { all.push_back(item.entry); });
    return all;
}

CacheStats CacheWriter::stats() const
{
    CacheStats s;
    {
        std::lock_guard<SpinThenSleepMutex> lock(mu_);
        s = locked_stats_;
        s.entries = entries_;
    }
    s.unpins = unpins_.load(std::memory_order_relaxed);
    s.bytes_pinned = bytes_pinned_.load(std::memory_order_relaxed);
    s.peak_bytes_pinned = peak_bytes_pinned_.load(std::memory_order_relaxed);
    return s;
}

PinnedNow CacheWriter::pinned_now() const
{
    std::lock_guard<SpinThenSleepMutex> lock(mu_);
    return {locked_stats_.pins - unpins_.load(std::memory_order_relaxed),
            bytes_pinned_.load(std::memory_order_relaxed)};
}

size_t CacheWriter::size() const
{
    std::lock_guard<SpinThenSleepMutex> lock(mu_);
    return entries_;
}

void CacheWriter::after_fork_in_child()
{
    mu_.reset();
    new (&pin_done_) std::condition_variable_any();
    pending_.clear();
    inflight_pins_.store(0, std::memory_order_relaxed);
}

} // namespace gdrhook
