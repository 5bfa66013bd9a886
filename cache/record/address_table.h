// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// An open-addressing hash table from a 64-bit key to a value, for the
// allocation tracker: linear probing, deletion by backward shift (no
// tombstones), doubling at half load. Unlike std::unordered_map it does not
// allocate a node per insert, which was most of the shim's cost on the
// allocation path. Not thread-safe: the tracker locks around it.
#pragma once

#include "cache/prim/hot_arena.h"
#include "cache/prim/hot_path.h"
#include <cstdint>
#include <memory>

namespace gdrhook {

template <typename Value> class AddressTable {
public:
    // Inserts or replaces.
    GDRHOOK_HOT void put(uint64_t key, const Value &value)
    {
        if ((size_ + 1) * 2 > capacity_)
            grow();
        size_t i = slot_for(key);
        while (slots_[i].used && slots_[i].key != key)
            i = (i + 1) & (capacity_ - 1);
        if (!slots_[i].used)
            ++size_;
        slots_[i] = Slot{key, value, true};
    }

    const Value *find(uint64_t key) const
    {
        if (!capacity_)
            return nullptr;
        for (size_t i = slot_for(key); slots_[i].used; i = (i + 1) & (capacity_ - 1))
            if (slots_[i].key == key)
                return &slots_[i].value;
        return nullptr;
    }

    GDRHOOK_HOT bool take(uint64_t key, Value &out)
    {
        if (!capacity_)
            return false;
        size_t i = slot_for(key);
        while (slots_[i].used && slots_[i].key != key)
            i = (i + 1) & (capacity_ - 1);
        if (!slots_[i].used)
            return false;
        out = slots_[i].value;
        erase_at(i);
        return true;
    }

    // Calls predicate(key, value) for every entry and removes those for
    // which it returns true.
    template <typename Predicate> void remove_if(Predicate &&predicate)
    {
        for (size_t i = 0; i < capacity_;) {
            if (slots_[i].used && predicate(slots_[i].key, slots_[i].value))
                erase_at(i); // the slot may now hold a shifted entry: look again
            else
                ++i;
        }
    }

    size_t size() const { return size_; }

private:
    // One cache line each: a lookup after the driver has evicted the table
    // (hot_path.h) then misses once, not twice for a slot across two lines.
    struct alignas(64) Slot {
        uint64_t key = 0;
        Value value{};
        bool used = false;
    };

    size_t slot_for(uint64_t key) const
    {
        // Allocations are aligned; mix so that the low bits vary.
        uint64_t h = key * 0x9e3779b97f4a7c15ull;
        return static_cast<size_t>(h >> 32) & (capacity_ - 1);
    }

    // Backward-shift deletion keeps every probe chain unbroken.
    void erase_at(size_t hole)
    {
        size_t i = hole;
        for (;;) {
            i = (i + 1) & (capacity_ - 1);
            if (!slots_[i].used)
                break;
            size_t home = slot_for(slots_[i].key);
            // Move the entry back if its home is not in (hole, i].
            bool stays = hole < i ? (home > hole && home <= i) : (home > hole || home <= i);
            if (!stays) {
                slots_[hole] = slots_[i];
                hole = i;
            }
        }
        slots_[hole].used = false;
        --size_;
    }

    void grow()
    {
        size_t old_capacity = capacity_;
        HotArray<Slot> old = std::move(slots_);
        capacity_ = old_capacity ? old_capacity * 2 : 64;
        slots_ = make_hot_array<Slot>(capacity_);
        size_ = 0;
        for (size_t i = 0; i < old_capacity; ++i)
            if (old[i].used)
                put(old[i].key, old[i].value);
    }

    HotArray<Slot> slots_; // hot_arena.h: with the rest of the hot path
    size_t capacity_ = 0;
    size_t size_ = 0;
};

} // namespace gdrhook
