// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace gdrhook::cli {

// A hash map from 64-bit keys (addresses, handles) to small values, in one
// array: open addressing, linear probing, deletion by shifting the entries
// after it back (no tombstones), at most half full. A lookup touches one
// or two cache lines where a node-based map chases a pointer per level:
// with the live allocations of a thousand processes (hundreds of MiB,
// nothing in cache), that is the difference between reading a job's logs
// at the speed of one file and reading them ten times slower.
//
// Invariant: every entry sits at or after its home slot (hash & mask),
// with no empty slot between its home and itself (wrapping around).
template <typename Value> class FlatMap {
public:
    size_t size() const { return size_ + (spare_ ? 1 : 0); }
    bool empty() const { return size() == 0; }

    Value *find(uint64_t key)
    {
        if (key == empty_key)
            return spare_ ? &*spare_ : nullptr;
        if (slots_.empty())
            return nullptr;
        for (size_t i = home(key);; i = (i + 1) & mask_) {
            if (slots_[i].key == key)
                return &slots_[i].value;
            if (slots_[i].key == empty_key)
                return nullptr;
        }
    }
    const Value *find(uint64_t key) const { return const_cast<FlatMap *>(this)->find(key); }

    // Asks the CPU to fetch the slot where @p key would be, ahead of a
    // find() or set() of it.
    void prefetch(uint64_t key) const
    {
        if (!slots_.empty())
            __builtin_prefetch(&slots_[home(key)]);
    }

    // Inserts or overwrites; returns the stored value.
    Value &set(uint64_t key, Value value)
    {
        if (key == empty_key)
            return spare_.emplace(std::move(value));
        if ((size_ + 1) * 2 > slots_.size())
            grow();
        size_t i = home(key);
        while (slots_[i].key != empty_key && slots_[i].key != key)
            i = (i + 1) & mask_;
        if (slots_[i].key == empty_key)
            ++size_;
        slots_[i] = Slot{key, std::move(value)};
        return slots_[i].value;
    }

    // Removes @p key; false if it was not there.
    bool erase(uint64_t key)
    {
        if (key == empty_key) {
            bool had = spare_.has_value();
            spare_.reset();
            return had;
        }
        if (slots_.empty())
            return false;
        size_t i = home(key);
        while (slots_[i].key != key) {
            if (slots_[i].key == empty_key)
                return false;
            i = (i + 1) & mask_;
        }
        // Shift back each following entry that may move into the hole
        // without passing its home slot.
        for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
            if (slots_[j].key == empty_key)
                break;
            size_t h = home(slots_[j].key);
            bool movable = i <= j ? (h <= i || h > j) : (h <= i && h > j);
            if (movable) {
                slots_[i] = std::move(slots_[j]);
                i = j;
            }
        }
        slots_[i] = Slot{};
        --size_;
        return true;
    }

    // Calls @p visit(key, value) for every entry, in no particular order.
    template <typename Visit> void for_each(Visit &&visit) const
    {
        for (const Slot &slot : slots_)
            if (slot.key != empty_key)
                visit(slot.key, slot.value);
        if (spare_)
            visit(empty_key, *spare_);
    }

private:
    static constexpr uint64_t empty_key = ~uint64_t{0};
    struct Slot {
        uint64_t key = empty_key;
        Value value{};
    };

    size_t home(uint64_t key) const
    {
        // Addresses share their low bits (alignment); mix them all in.
        key ^= key >> 33;
        key *= 0xff51afd7ed558ccdull;
        key ^= key >> 33;
        return static_cast<size_t>(key) & mask_;
    }

    void grow()
    {
        std::vector<Slot> old = std::move(slots_);
        slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
        mask_ = slots_.size() - 1;
        size_ = 0;
        for (Slot &slot : old)
            if (slot.key != empty_key)
                set(slot.key, std::move(slot.value));
    }

    std::vector<Slot> slots_;
    size_t mask_ = 0;
    size_t size_ = 0;            // entries in slots_
    std::optional<Value> spare_; // the one key that marks an empty slot
};

} // namespace gdrhook::cli
