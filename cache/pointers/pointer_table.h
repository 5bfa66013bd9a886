// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The pointer-attribute table: a record per allocation whose attributes
// the shim answers (pointer_record.h), found from any pointer into it with
// no lock, no write and no allocation.
//
// Two arrays in one 2 MiB region (a transparent huge page where the
// kernel gives one: one TLB entry for the whole table, where small pages
// cost a TLB miss per line on a virtual machine), made on the first
// insert and never freed:
//  - the records: 4096 buckets of 4 slots, a slot one cache line, a
//    bucket chosen by the allocation's base. A bucket that is full loses
//    its oldest record (the next query asks the driver again);
//  - the hints: from a pointer's page to the slot of the allocation last
//    found there, two tables of 262,144 slot numbers (2 bytes each, 32 a
//    cache line): 64 KiB pages for allocations of 64 KiB and more (tried
//    first), 4 KiB pages for smaller ones, which share a 64 KiB page. A
//    hint is only a guess: a reader trusts a record, never a hint, and a
//    record answers only for a pointer inside its range (the ranges of
//    live allocations never overlap, and a record leaves the table before
//    its allocation's free returns).
// A hit reads two lines, the hint's and the record's slot (three for a
// small allocation). Probing the bucket of the pointer itself first, for
// a pointer that is a base, cost four cold lines for every other pointer:
// measured, twice the time.
//
// Invariants:
//  - a slot's key and values change only inside its seqlock write (version
//    odd); a reader that reads the same even version before and after has
//    a consistent copy of one record that was in the table between the two
//    reads. Every field is an atomic, read and written relaxed; the version
//    orders them (fences);
//  - writers are serialized by the table's mutex (lock());
//  - once forget(base) returned, no reader that starts later finds a record
//    keyed by base (the slot's key is cleared inside a seqlock write).
#pragma once

#include "cache/pointers/pointer_record.h"

#include <atomic>
#include <cstdint>
#include <mutex>

namespace gdrhook {

struct alignas(64) PointerSlot {
    std::atomic<uint64_t> version; // seqlock: odd while a writer changes the slot
    std::atomic<uint64_t> base;    // 0 = empty
    std::atomic<uint64_t> size, buffer_id, context;
    std::atomic<uint32_t> memory_type;
    std::atomic<int32_t> device_ordinal;
    std::atomic<uint32_t> is_managed;
    std::atomic<uint8_t> known_single, known_many;
};
static_assert(sizeof(PointerSlot) == 64, "one cache line a slot");

class PointerTable {
public:
    static constexpr uint64_t bucket_count = 4096;
    static constexpr uint64_t bucket_slots = 4;
    static constexpr uint64_t slot_count = bucket_count * bucket_slots;
    static constexpr uint64_t hint_count = uint64_t{1} << 18; // per page size
    static constexpr int hint_sizes = 2;
    static constexpr int page_shifts[hint_sizes] = {16, 12}; // in the order readers try

    // Readers, lock-free: the record whose range contains ptr.
    bool find(uint64_t ptr, PointerRecord &out) const;
    // The record keyed by base, if any.
    bool find_base(uint64_t base, PointerRecord &out) const;

    // Writers hold this.
    std::mutex &lock() { return writer_; }
    // Puts `record` (keyed by its base) in, replacing a record of the same
    // base, and points ptr's hint at it. False when the arrays cannot be
    // made.
    bool put(const PointerRecord &record, uint64_t ptr);
    // Points ptr's hint at the record of `record`'s allocation (any thread).
    void hint(const PointerRecord &record, uint64_t ptr);
    // Takes out the record keyed by base, if any.
    void forget(uint64_t base);
    // Whether anything was ever put: no record to forget before.
    bool made() const { return slots_.load(std::memory_order_seq_cst) != nullptr; }
    // In a forked child: the writer may have been a thread that is gone.
    void reinitialize_lock_after_fork() { new (&writer_) std::mutex(); }

private:
    static uint64_t mix(uint64_t key) { return key * 0x9E3779B97F4A7C15ull; }
    static uint64_t bucket_of(uint64_t base) { return (mix(base >> 9) >> 52) & (bucket_count - 1); }
    static uint64_t hint_of(uint64_t ptr, int size)
    {
        return (mix(ptr >> page_shifts[size]) >> 46) & (hint_count - 1);
    }
    // A hint: the slot's number plus one (0: none).
    using Hint = std::atomic<uint16_t>;
    static_assert(slot_count < 0xffff, "a slot's number fits a hint");
    // The record in `slot` if its key is base (any non-empty key for 0).
    bool read(const PointerSlot &slot, uint64_t base, PointerRecord &out) const;
    void write(PointerSlot &slot, const PointerRecord &record);
    bool make();

    std::atomic<PointerSlot *> slots_{nullptr};
    // A table per page size, written before slots_ is published.
    Hint *hints_[hint_sizes] = {};
    std::mutex writer_;
};

inline bool PointerTable::read(const PointerSlot &slot, uint64_t base, PointerRecord &out) const
{
    // acquire: the fields read below are at least as new as this version.
    const uint64_t before = slot.version.load(std::memory_order_acquire);
    const uint64_t key = slot.base.load(std::memory_order_relaxed);
    if (key == 0 || (base != 0 && key != base))
        return false;
    PointerRecord r;
    r.base = key;
    r.size = slot.size.load(std::memory_order_relaxed);
    r.buffer_id = slot.buffer_id.load(std::memory_order_relaxed);
    r.context = slot.context.load(std::memory_order_relaxed);
    r.memory_type = slot.memory_type.load(std::memory_order_relaxed);
    r.device_ordinal = slot.device_ordinal.load(std::memory_order_relaxed);
    r.is_managed = slot.is_managed.load(std::memory_order_relaxed);
    r.known_single = slot.known_single.load(std::memory_order_relaxed);
    r.known_many = slot.known_many.load(std::memory_order_relaxed);
    // The reads above complete before the version is read again.
    std::atomic_thread_fence(std::memory_order_acquire);
    if ((before & 1) || slot.version.load(std::memory_order_relaxed) != before)
        return false; // a writer was here: the caller asks the driver
    out = r;
    return true;
}

inline bool PointerTable::find_base(uint64_t base, PointerRecord &out) const
{
    // acquire: pairs with the release that published the zeroed arrays.
    const PointerSlot *slots = slots_.load(std::memory_order_acquire);
    if (!slots || base == 0)
        return false;
    const PointerSlot *bucket = slots + bucket_of(base) * bucket_slots;
    for (uint64_t i = 0; i < bucket_slots; ++i)
        if (read(bucket[i], base, out))
            return true;
    return false;
}

inline bool PointerTable::find(uint64_t ptr, PointerRecord &out) const
{
    // acquire: pairs with the release that published the zeroed arrays.
    const PointerSlot *slots = slots_.load(std::memory_order_acquire);
    if (!slots)
        return false;
    for (int size = 0; size < hint_sizes; ++size) {
        const uint16_t hint = hints_[size][hint_of(ptr, size)].load(std::memory_order_relaxed);
        if (hint && read(slots[hint - 1], 0, out) && out.contains(ptr))
            return true;
    }
    return false;
}

} // namespace gdrhook
