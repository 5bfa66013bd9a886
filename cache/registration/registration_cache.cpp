// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/registration/registration_cache.h"

namespace gdrhook {

const char *to_string(UnpinReason reason)
{
    switch (reason) {
    case UnpinReason::invalidated: return "invalidated";
    case UnpinReason::evicted: return "evicted";
    case UnpinReason::merged: return "merged";
    case UnpinReason::stale: return "stale";
    case UnpinReason::revoked: return "revoked";
    case UnpinReason::teardown: return "teardown";
    case UnpinReason::fd_budget: return "fd_budget";
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
    : backend_(std::move(backend)), options_(std::move(options)), verify_(options_.verify),
      hit_cache_(options_.verify), published_(options_.max_entries),
      writer_(*backend_, options_, published_, [this] { reclaimer_.reclaim(); }),
      reclaimer_(*backend_, published_, records_, writer_)
{
    enable_asymmetric_fence();
}

RegistrationCache::~RegistrationCache()
{
    // Everything left is unpinned, held or not: the owner is going away.
    reclaimer_.release_all(writer_.indexed_entries());
    index_destroy(const_cast<IndexRoot *>(published_.head.load(std::memory_order_relaxed)));
}

// --- lookups -----------------------------------------------------------

Status RegistrationCache::lookup_past_hit_cache(ThreadRecord *record, uint64_t addr, uint64_t end,
                                                uint64_t gen, HitSlot *slot, Registration &out)
{
    PageHashValue value;
    if (!verify_ && published_.hash.find(addr, end, value)) {
        out = Registration::of(value);
        hit_cache_.note_hash_hit(record, addr, value, gen, slot);
        count_by_owner(record->hits);
        return Status::success();
    }
    return lookup_shared(record, addr, end, gen, out, nullptr);
}

Status RegistrationCache::get_past_hit_cache(ThreadRecord *record, uint64_t addr, uint64_t end,
                                             uint64_t gen, HitSlot *slot, HeldRegistration &out)
{
    PageHashValue value;
    if (!verify_ && published_.hash.find(addr, end, value)) {
        int h = free_hold_slot(record);
        if (h >= 0) {
            // The hit-slot protocol: the entry was in the hash after gen was
            // read; if gen has not moved since the hold was published, the
            // reclaimer sees the hold (the writer moves gen before the
            // reclaimer can take the entry, which fences before it scans).
            record->holds[h].store(value.id, std::memory_order_relaxed);
            hold_fence();
            if (published_.gen.load(std::memory_order_acquire) == gen) {
                out.reg = Registration::of(value);
                out.record = record;
                out.slot = static_cast<uint32_t>(h);
                out.entry = nullptr;
                hit_cache_.note_hash_hit(record, addr, value, gen, slot);
                count_by_owner(record->hits);
                return Status::success();
            }
            record->holds[h].store(0, std::memory_order_release);
        }
    }
    return lookup_shared(record, addr, end, gen, out.reg, &out);
}

Status RegistrationCache::prepare_deferred_pin(const HeldRegistration &held)
{
    CacheEntry *entry = held.entry ? held.entry : held_entry(held.reg);
    if (entry && entry->peer_ready.load(std::memory_order_acquire))
        return Status::success();
    // Two first gets may both set it: the driver call is idempotent.
    Status status = backend_->prepare_for_peer(held.reg.base);
    if (status.ok() && entry)
        entry->peer_ready.store(true, std::memory_order_release);
    return status;
}

// The entry of a registration this thread holds, which the hold keeps from
// being unpinned and freed; null once a free took it out of the index (the
// caller then prepares the memory without remembering it).
CacheEntry *RegistrationCache::held_entry(const Registration &reg)
{
    ThreadRecord *record = this_thread_record();
    published_.enter(record);
    const IndexRecord *found =
        index_find(published_.head.load(std::memory_order_acquire), reg.base, reg.base + 1);
    CacheEntry *entry = found && found->values.id == reg.id ? found->entry : nullptr;
    PublishedState::leave(record);
    return entry;
}

Status RegistrationCache::lookup_shared(ThreadRecord *record, uint64_t addr, uint64_t end,
                                        uint64_t gen, Registration &out, HeldRegistration *held)
{
    for (int attempt = 0; attempt < 4; ++attempt) {
        published_.enter(record);
        const IndexRecord *found =
            index_find(published_.head.load(std::memory_order_acquire), addr, end);
        CacheEntry *entry = found ? found->entry : nullptr;
        bool valid = entry != nullptr;
        if (entry) {
            const PinnedRange range = range_of(*found);
            out = Registration::of(range);
            if (!found->referenced.load(std::memory_order_relaxed))
                found->referenced.store(1, std::memory_order_relaxed);
            hit_cache_.fill(record, addr, range, gen);
            if (held) {
                int h = free_hold_slot(record);
                if (h >= 0) {
                    record->holds[h].store(found->values.id, std::memory_order_relaxed);
                    hold_fence();
                    valid = published_.gen.load(std::memory_order_acquire) == gen;
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
                    valid = published_.gen.load(std::memory_order_seq_cst) == gen;
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
        PublishedState::leave(record);
        if (!entry)
            break;
        if (valid) {
            if (verify_ && !verify_hit(record, addr, out)) {
                if (held)
                    put(*held);
                break; // stale: the miss path pins the new allocation
            }
            count_by_owner(record->hits);
            return Status::success();
        }
        // An invalidation ran meanwhile; look again with its generation.
        gen = published_.gen.load(std::memory_order_acquire);
    }
    count_by_owner(record->misses);
    return writer_.miss(record, addr, end, out, held);
}

bool RegistrationCache::verify_hit(ThreadRecord *record, uint64_t addr, const Registration &reg)
{
    if (!options_.buffer_id)
        return true;
    count_by_owner(record->verify_checks);
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

// --- the writer's and the reclaimer's doors ---------------------------------

size_t RegistrationCache::invalidate(uint64_t addr, uint64_t length, uint64_t started_up_to)
{
    return writer_.invalidate(records_, addr, range_end(addr, length), started_up_to);
}

size_t RegistrationCache::invalidate_to_unpin(uint64_t addr, uint64_t length,
                                              uint64_t started_up_to)
{
    return writer_.invalidate(records_, addr, range_end(addr, length), started_up_to, true);
}

std::vector<Registration> RegistrationCache::revoke(const std::vector<uint64_t> &backend_handles)
{
    return writer_.revoke(backend_handles);
}

size_t RegistrationCache::retire_all()
{
    // A free that claimed an entry may not run again as the process ends.
    reclaimer_.void_claims();
    return writer_.retire_all();
}

size_t RegistrationCache::drain_unpins(const std::function<void(const UnpinRecord &)> &report)
{
    return reclaimer_.drain(report);
}

ThreadRecord *RegistrationCache::bind_thread()
{
    return records_.bind_thread();
}

void RegistrationCache::wake()
{
    writer_.wake();
}

void RegistrationCache::put_counted(CacheEntry *entry)
{
    // The entry may be freed right after this decrement: touch it no more.
    entry->refs.fetch_sub(1, std::memory_order_seq_cst);
    if (published_.pending_held.load(std::memory_order_seq_cst))
        writer_.wake();
}

bool RegistrationCache::has_retired() const
{
    return writer_.has_retired() || reclaimer_.has_unreported();
}

// --- statistics and fork ----------------------------------------------------

CacheStats RegistrationCache::stats() const
{
    CacheStats s = writer_.stats();
    records_.for_each([&s](const ThreadRecord &r) {
        s.hits += hits_of(r);
        s.misses += r.misses.load(std::memory_order_relaxed);
        s.verify_checks += r.verify_checks.load(std::memory_order_relaxed);
    });
    reclaimer_.add_stats(s);
    s.verify_mismatches = verify_mismatches_.load(std::memory_order_relaxed);
    return s;
}

PinnedNow RegistrationCache::pinned_now() const
{
    return writer_.pinned_now();
}

size_t RegistrationCache::size() const
{
    return writer_.size();
}

void RegistrationCache::after_fork_in_child()
{
    writer_.after_fork_in_child();
    reclaimer_.after_fork_in_child();
    records_.after_fork_in_child();
}

} // namespace gdrhook
