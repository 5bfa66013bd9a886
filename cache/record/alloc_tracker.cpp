// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/record/alloc_tracker.h"

#include <new>

namespace gdrhook {

AllocTracker::Shard &AllocTracker::shard_for(uint64_t key) const
{
    return shards_[mix(key) >> 60];
}

AllocTracker::FrontEntry *AllocTracker::make_front()
{
    std::lock_guard<std::mutex> lock(front_creation_);
    if (FrontEntry *front = front_.load(std::memory_order_relaxed))
        return front;
    front_storage_ = make_hot_array<FrontEntry>(front_size);
    front_.store(front_storage_.get(), std::memory_order_release);
    return front_storage_.get();
}

template <typename Visit> void AllocTracker::for_each_front(Visit &&visit) const
{
    FrontEntry *front = front_.load(std::memory_order_acquire);
    if (!front)
        return;
    for (size_t i = 0; i < front_size; ++i) {
        std::lock_guard<SpinLock> lock(front[i].lock);
        if (front[i].used)
            visit(front[i]);
    }
}

void AllocTracker::insert_beyond_front(uint64_t k, const Allocation &allocation)
{
    if (!front_.load(std::memory_order_acquire)) {
        make_front();
        insert(allocation);
        return;
    }
    Shard &shard = shard_for(k);
    std::lock_guard<SpinLock> lock(shard.lock);
    shard.by_key.put(k, allocation);
}

bool AllocTracker::take_beyond_front(uint64_t k, Allocation &out)
{
    Shard &shard = shard_for(k);
    std::lock_guard<SpinLock> lock(shard.lock);
    return shard.by_key.take(k, out);
}

std::optional<Allocation> AllocTracker::find(MemoryKind kind, uint64_t addr) const
{
    uint64_t k = key(kind, addr);
    if (FrontEntry *front = front_entry(k)) {
        std::lock_guard<SpinLock> lock(front->lock);
        if (front->used && front->key == k)
            return front->allocation;
    }
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
    auto inside = [&](const Allocation &a) {
        return a.kind == MemoryKind::vmm_mapping && a.addr >= addr && a.addr - addr < size;
    };
    for_each_front([&](FrontEntry &entry) {
        if (inside(entry.allocation)) {
            removed.push_back(entry.allocation);
            entry.used = false;
        }
    });
    for (Shard &shard : shards_) {
        std::lock_guard<SpinLock> lock(shard.lock);
        shard.by_key.remove_if([&](uint64_t, const Allocation &a) {
            if (!inside(a))
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
    for_each_front([&](FrontEntry &entry) {
        if (entry.allocation.context == context) {
            removed.push_back(entry.allocation);
            entry.used = false;
        }
    });
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

std::vector<Allocation> AllocTracker::in_context(uint64_t context) const
{
    std::vector<Allocation> found;
    for_each_front([&](const FrontEntry &entry) {
        if (entry.allocation.context == context)
            found.push_back(entry.allocation);
    });
    for (Shard &shard : shards_) {
        std::lock_guard<SpinLock> lock(shard.lock);
        shard.by_key.remove_if([&](uint64_t, const Allocation &a) {
            if (a.context == context)
                found.push_back(a);
            return false; // kept
        });
    }
    return found;
}

size_t AllocTracker::size() const
{
    size_t total = 0;
    for_each_front([&](const FrontEntry &) { ++total; });
    for (Shard &shard : shards_) {
        std::lock_guard<SpinLock> lock(shard.lock);
        total += shard.by_key.size();
    }
    return total;
}

void AllocTracker::reinitialize_locks_after_fork()
{
    new (&front_creation_) std::mutex();
    if (FrontEntry *front = front_.load(std::memory_order_relaxed))
        for (size_t i = 0; i < front_size; ++i)
            front[i].lock.reset();
    for (Shard &shard : shards_)
        shard.lock.reset();
}

} // namespace gdrhook
