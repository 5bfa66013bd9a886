// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the application has allocated, so that a free can name the size and
// device of what it released, and a context teardown can name everything it
// took down. Keyed by (memory kind family, address or handle).
//
// Allocation and free paths cost tens of microseconds in the driver; a
// sharded spin lock here costs a few nanoseconds and keeps the code obvious.
// The lock-free part of the design is the registration cache's lookup, not
// this table.
#pragma once

#include "cache/hot_path.h"
#include "cache/address_table.h"
#include "cache/event.h"
#include "cache/spin_lock.h"

#include <array>
#include <cstdint>
#include <mutex> // std::lock_guard
#include <optional>
#include <vector>

namespace gdrhook {

struct Allocation {
    uint64_t addr = 0;       // base address, or the handle for vmm_physical
    uint64_t size = 0;
    uint64_t context = 0;    // CUcontext the allocation belongs to (0: none)
    int32_t dev = -1;
    MemoryKind kind = MemoryKind::device;
};

class AllocTracker
{
public:
    GDRHOOK_HOT void insert(const Allocation &allocation);

    // Removes and returns the allocation whose base is `addr` in the
    // namespace of `kind` (handles and addresses never collide).
    GDRHOOK_HOT std::optional<Allocation> remove(MemoryKind kind, uint64_t addr);

    // Removes every mapping (MemoryKind::vmm_mapping) inside [addr, addr+size).
    std::vector<Allocation> remove_mappings_in(uint64_t addr, uint64_t size);

    // Removes everything that belongs to `context`.
    std::vector<Allocation> remove_context(uint64_t context);

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
    static uint64_t key(MemoryKind kind, uint64_t addr);
    Shard &shard_for(uint64_t key) const;

    mutable std::array<Shard, shard_count> shards_;
};

} // namespace gdrhook
