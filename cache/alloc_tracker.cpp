// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/alloc_tracker.h"


namespace gdrhook {

uint64_t AllocTracker::key(MemoryKind kind, uint64_t addr)
{
    // Physical handles live in their own namespace: flip the top bit, which
    // no canonical user-space address or driver handle has set.
    return is_handle(kind) ? addr ^ (1ull << 63) : addr;
}

AllocTracker::Shard &AllocTracker::shard_for(uint64_t key) const
{
    // Allocations are at least 512-byte aligned; mix the bits above that.
    uint64_t h = (key >> 9) * 0x9e3779b97f4a7c15ull;
    return shards_[h >> 60];
}

void AllocTracker::insert(const Allocation &allocation)
{
    uint64_t k = key(allocation.kind, allocation.addr);
    Shard &shard = shard_for(k);
    std::lock_guard<SpinLock> lock(shard.lock);
    shard.by_key.put(k, allocation);
}

std::optional<Allocation> AllocTracker::remove(MemoryKind kind, uint64_t addr)
{
    uint64_t k = key(kind, addr);
    Shard &shard = shard_for(k);
    std::lock_guard<SpinLock> lock(shard.lock);
    Allocation found;
    if (!shard.by_key.take(k, found))
        return std::nullopt;
    return found;
}

std::optional<Allocation> AllocTracker::find(MemoryKind kind, uint64_t addr) const
{
    uint64_t k = key(kind, addr);
    Shard &shard = shard_for(k);
    std::lock_guard<SpinLock> lock(shard.lock);
    if (const Allocation *found = shard.by_key.find(k))
        return *found;
    return std::nullopt;
}

std::vector<Allocation> AllocTracker::remove_mappings_in(uint64_t addr, uint64_t size)
{
    std::vector<Allocation> removed;
    // The common case unmaps exactly what one cuMemMap mapped.
    if (auto exact = remove(MemoryKind::vmm_mapping, addr)) {
        removed.push_back(*exact);
        if (exact->size >= size)
            return removed;
    }
    for (Shard &shard : shards_) {
        std::lock_guard<SpinLock> lock(shard.lock);
        shard.by_key.remove_if([&](uint64_t, const Allocation &a) {
            if (a.kind != MemoryKind::vmm_mapping || a.addr < addr || a.addr - addr >= size)
                return false;
            removed.push_back(a);
            return true;
        });
    }
    return removed;
}

std::vector<Allocation> AllocTracker::remove_context(uint64_t context)
{
    std::vector<Allocation> removed;
    for (Shard &shard : shards_) {
        std::lock_guard<SpinLock> lock(shard.lock);
        shard.by_key.remove_if([&](uint64_t, const Allocation &a) {
            if (a.context != context)
                return false;
            removed.push_back(a);
            return true;
        });
    }
    return removed;
}

size_t AllocTracker::size() const
{
    size_t total = 0;
    for (Shard &shard : shards_) {
        std::lock_guard<SpinLock> lock(shard.lock);
        total += shard.by_key.size();
    }
    return total;
}

void AllocTracker::reinitialize_locks_after_fork()
{
    for (Shard &shard : shards_)
        shard.lock.reset();
}

} // namespace gdrhook
