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
//  - a slot's key and values change only inside its seqlock write
//    (cache/prim/seqlock.h: version odd); a reader that reads the same even version before and after has
//    a consistent copy of one record that was in the table between the two
//    reads. Every field is an atomic, read and written relaxed; the version
//    orders them (fences);
//  - writers are serialized by the table's mutex (lock());
//  - once forget(base) returned, no reader that starts later finds a record
//    keyed by base (the slot's key is cleared inside a seqlock write).
#pragma once

#include "cache/pointers/pointer_record.h"
#include "cache/prim/seqlock.h"
#include "cache/prim/spin_then_sleep_mutex.h"

#include <atomic>
#include <cstdint>
#include <mutex>

namespace gdrhook {

// A slot: the seqlock's version and six words, each attribute at its
// place (slot_places): one load and a shift read any attribute, with no
// branch on which.
inline constexpr int slot_words = 6;
struct alignas(64) PointerSlot {
    std::atomic<uint64_t> version; // seqlock: odd while a writer changes the slot
    std::atomic<uint64_t> words[slot_words];
};
static_assert(sizeof(PointerSlot) == 64, "one cache line a slot");

// Where each answered attribute lives in a slot: the word, the bit it
// starts at, and its width (attribute_bytes). Word 0 is the base (0: an
// empty slot), word 1 the size; the known bits share word 5 with
// IS_MANAGED.
struct SlotPlace {
    uint8_t word, shift;
    uint64_t mask;
};
inline constexpr uint64_t low_half = 0xffffffffu;
inline constexpr SlotPlace slot_places[answered_attribute_count] = {
    {2, 0, ~uint64_t{0}}, // buffer_id
    {4, 0, low_half},     // memory_type
    {4, 32, low_half},    // device_ordinal
    {3, 0, ~uint64_t{0}}, // context
    {0, 0, ~uint64_t{0}}, // range_start: the base
    {1, 0, ~uint64_t{0}}, // range_size
    {5, 0, low_half},     // is_managed
};
inline constexpr int known_word = 5, known_single_shift = 32, known_many_shift = 40;

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
    // The value of `attribute` for ptr from the record whose range contains
    // it, if that record knows it from cuPointerGetAttribute (known_single).
    bool answer(uint64_t ptr, AnsweredAttribute attribute, uint64_t &value) const;
    // The record keyed by base, if any.
    bool find_base(uint64_t base, PointerRecord &out) const;

    // Writers hold this. Every free takes it twice once the table is made
    // (before and after the real free), on the program's thread: a waiter
    // spins rather than sleeps while the holder runs.
    SpinThenSleepMutex &lock() { return writer_; }
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
    void reinitialize_lock_after_fork() { writer_.reset(); }

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
    // Finds the slot ptr's hints name whose record holds ptr, with a
    // consistent read: take(slot) loads what the caller wants of it inside
    // the seqlock's read.
    template <typename Take> bool lookup(uint64_t ptr, Take &&take) const;
    void write(PointerSlot &slot, const PointerRecord &record);
    bool make();

    std::atomic<PointerSlot *> slots_{nullptr};
    // A table per page size, written before slots_ is published.
    Hint *hints_[hint_sizes] = {};
    SpinThenSleepMutex writer_;
};

// A consistent copy of a slot's words, or false where a writer was there.
inline bool read_slot(const PointerSlot &slot, uint64_t (&words)[slot_words])
{
    const uint64_t before = seqlock_read_begin(slot.version);
    for (int i = 0; i < slot_words; ++i)
        words[i] = slot.words[i].load(std::memory_order_relaxed);
    return seqlock_read_valid(slot.version, before);
}

inline uint64_t word_value(const uint64_t (&words)[slot_words], AnsweredAttribute attribute)
{
    const SlotPlace &place = slot_places[static_cast<int>(attribute)];
    return (words[place.word] >> place.shift) & place.mask;
}

inline PointerRecord record_of_words(const uint64_t (&words)[slot_words])
{
    PointerRecord r;
    r.base = words[0];
    r.size = words[1];
    for (int a = 0; a < answered_attribute_count; ++a)
        r.keep(static_cast<AnsweredAttribute>(a),
               word_value(words, static_cast<AnsweredAttribute>(a)));
    r.known_single = static_cast<uint8_t>(words[known_word] >> known_single_shift);
    r.known_many = static_cast<uint8_t>(words[known_word] >> known_many_shift);
    return r;
}

inline bool PointerTable::read(const PointerSlot &slot, uint64_t base, PointerRecord &out) const
{
    uint64_t words[slot_words];
    if (!read_slot(slot, words) || words[0] == 0 || (base != 0 && words[0] != base))
        return false; // empty, another key, or a writer was here: the caller asks the driver
    out = record_of_words(words);
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

// Inlined: a call and the captures spilled to the stack cost a hit a third
// of its time on the fake driver.
template <typename Take>
__attribute__((always_inline)) inline bool PointerTable::lookup(uint64_t ptr, Take &&take) const
{
    // acquire: pairs with the release that published the zeroed arrays.
    const PointerSlot *slots = slots_.load(std::memory_order_acquire);
    if (!slots)
        return false;
    for (int size = 0; size < hint_sizes; ++size) {
        const uint16_t hint = hints_[size][hint_of(ptr, size)].load(std::memory_order_relaxed);
        if (!hint)
            continue;
        const PointerSlot &slot = slots[hint - 1];
        const uint64_t before = seqlock_read_begin(slot.version);
        const uint64_t base = slot.words[0].load(std::memory_order_relaxed);
        const uint64_t bytes = slot.words[1].load(std::memory_order_relaxed);
        take(slot);
        if (!seqlock_read_valid(slot.version, before))
            continue; // a writer was here: the caller asks the driver
        // An empty slot has size 0.
        if (ptr - base < bytes)
            return true;
    }
    return false;
}

inline bool PointerTable::find(uint64_t ptr, PointerRecord &out) const
{
    uint64_t words[slot_words];
    if (!lookup(ptr, [&](const PointerSlot &slot) {
            for (int i = 0; i < slot_words; ++i)
                words[i] = slot.words[i].load(std::memory_order_relaxed);
        }))
        return false;
    out = record_of_words(words);
    return true;
}

__attribute__((always_inline)) inline bool
PointerTable::answer(uint64_t ptr, AnsweredAttribute attribute, uint64_t &value) const
{
    const SlotPlace &place = slot_places[static_cast<int>(attribute)];
    uint64_t known = 0, word = 0;
    if (!lookup(ptr, [&](const PointerSlot &slot) {
            known = slot.words[known_word].load(std::memory_order_relaxed);
            word = slot.words[place.word].load(std::memory_order_relaxed);
        }))
        return false;
    if (!((known >> known_single_shift) & attribute_bit(attribute)))
        return false;
    value = (word >> place.shift) & place.mask;
    return true;
}

} // namespace gdrhook
