// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the application has allocated, so that a free can name the size and
// device of what it released, and a context teardown can name everything it
// took down. Keyed by (memory kind family, address or handle).
//
// Two levels. The front is a fixed table with one allocation per entry,
// each entry one cache line holding its own lock, key and allocation: an
// allocation freed while nothing else hashes to its entry (the common case
// for short-lived buffers) costs the application one line on insert and
// one on remove. On a real GPU the driver evicts the tracker between two
// calls, so lines touched, not instructions, are the cost (hot_path.h).
// What collides in the front goes to the shards: sharded spin locks over
// open-addressing tables that grow. An entry never moves between the two
// levels, so a lookup that misses in both really missed.
//
// An address inserted again while an older entry for it is still tracked
// (the driver handed it out again and its free was never seen) replaces
// the older entry when both land in the same level; across levels the
// front one shadows the other, which stays until the key next lands in the
// shards.
#pragma once

#include "cache/events/event.h"
#include "cache/prim/hot_path.h"
#include "cache/prim/spin_lock.h"
#include "cache/record/address_table.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace gdrhook {

struct Allocation {
    uint64_t addr = 0; // base address, or the handle for vmm_physical
    uint64_t size = 0;
    uint64_t context = 0; // CUcontext the allocation belongs to (0: none)
    int32_t dev = -1;
    MemoryKind kind = MemoryKind::device;
    // Made by a graph (an allocation node, or stream-ordered during a
    // capture): its memory comes and goes with the graph's launches.
    bool graph = false;
};

class AllocTracker {
public:
    // Inline: the front's case is the allocation path's; the rest is not.
    void insert(const Allocation &allocation)
    {
        const uint64_t k = key(allocation.kind, allocation.addr);
        if (FrontEntry *front = front_entry(k)) {
            std::lock_guard<SpinLock> lock(front->lock);
            if (!front->used || front->key == k) {
                front->used = true;
                front->key = k;
                front->allocation = allocation;
                return;
            }
        }
        insert_beyond_front(k, allocation);
    }

    // Removes the allocation whose base is `addr` in the namespace of
    // `kind` (handles and addresses never collide) into `out`; false if
    // none is tracked.
    bool take(MemoryKind kind, uint64_t addr, Allocation &out)
    {
        const uint64_t k = key(kind, addr);
        if (FrontEntry *front = front_entry(k)) {
            std::lock_guard<SpinLock> lock(front->lock);
            if (front->used && front->key == k) {
                front->used = false;
                out = front->allocation;
                return true;
            }
        }
        return take_beyond_front(k, out);
    }

    // The same, as an optional.
    std::optional<Allocation> remove(MemoryKind kind, uint64_t addr)
    {
        Allocation found;
        if (!take(kind, addr, found))
            return std::nullopt;
        return found;
    }

    // Removes every mapping (MemoryKind::vmm_mapping) inside [addr, addr+size).
    std::vector<Allocation> remove_mappings_in(uint64_t addr, uint64_t size);

    // Removes everything that belongs to `context`.
    std::vector<Allocation> remove_context(uint64_t context);
    // What remove_context would remove, left in place.
    std::vector<Allocation> in_context(uint64_t context) const;

    std::optional<Allocation> find(MemoryKind kind, uint64_t addr) const;
    size_t size() const;

    // In a forked child: the mutexes may have been held by threads that do
    // not exist there. The contents stay (the child shares the allocations).
    void reinitialize_locks_after_fork();

private:
    static constexpr size_t shard_count = 16;

    // One cache line (or more) per shard: threads on different shards must
    // not contend for one line.
    struct alignas(64) Shard {
        mutable SpinLock lock;
        AddressTable<Allocation> by_key;
    };

    static bool is_handle(MemoryKind kind) { return kind == MemoryKind::vmm_physical; }
    static uint64_t key(MemoryKind kind, uint64_t addr)
    {
        // Physical handles live in their own namespace: flip the top bit,
        // which no canonical user-space address or driver handle has set.
        return is_handle(kind) ? addr ^ (1ull << 63) : addr;
    }
    // Allocations are at least 512-byte aligned; mix the bits above that.
    // The front takes the top bits of the product, the shards the top four.
    static uint64_t mix(uint64_t key) { return (key >> 9) * 0x9e3779b97f4a7c15ull; }
    Shard &shard_for(uint64_t key) const;

    struct alignas(64) FrontEntry {
        mutable SpinLock lock;
        bool used = false;
        uint64_t key = 0;
        Allocation allocation;
    };
    static_assert(sizeof(FrontEntry) == 64, "one line per front entry");
    static constexpr size_t front_bits = 12;
    static constexpr size_t front_size = size_t{1} << front_bits;

    // Null until the first insert: a pass-through process
    // (GDRHOOK_DISABLE=1) never maps the hot arena for it.
    FrontEntry *front_entry(uint64_t key) const
    {
        FrontEntry *front = front_.load(std::memory_order_acquire);
        return front ? &front[mix(key) >> (64 - front_bits)] : nullptr;
    }
    FrontEntry *make_front();
    // Out of line: the shards, and the first insert, which makes the front.
    void insert_beyond_front(uint64_t key, const Allocation &allocation);
    bool take_beyond_front(uint64_t key, Allocation &out);
    // Calls visit(entry) for every used front entry, each under its lock.
    template <typename Visit> void for_each_front(Visit &&visit) const;

    std::atomic<FrontEntry *> front_{nullptr};
    HotArray<FrontEntry> front_storage_;
    std::mutex front_creation_;

    mutable std::array<Shard, shard_count> shards_;
};

} // namespace gdrhook
