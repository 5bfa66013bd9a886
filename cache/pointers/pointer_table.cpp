// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/pointers/pointer_table.h"

#include "cache/prim/hot_arena.h"

namespace gdrhook {

bool PointerTable::make()
{
    if (slots_.load(std::memory_order_relaxed))
        return true;
    // Zeroed pages, never freed: readers may hold a pointer into them at
    // any time, and a forked child keeps them.
    constexpr size_t slot_bytes = slot_count * sizeof(PointerSlot);
    constexpr size_t hint_bytes = hint_count * sizeof(Hint);
    static_assert(slot_bytes + hint_sizes * hint_bytes == hot_arena_size, "one huge page");
    void *memory = map_huge_page_region(hot_arena_size);
    if (!memory)
        return false;
    for (int size = 0; size < hint_sizes; ++size)
        hints_[size] =
            reinterpret_cast<Hint *>(static_cast<char *>(memory) + slot_bytes + size * hint_bytes);
    // seq_cst: a free that runs next reads it (made()) after counting
    // itself, and the writer reads that count after this store.
    slots_.store(reinterpret_cast<PointerSlot *>(memory), std::memory_order_seq_cst);
    return true;
}

void PointerTable::write(PointerSlot &slot, const PointerRecord &record)
{
    uint64_t words[slot_words] = {record.base, record.size};
    for (int a = 0; a < answered_attribute_count; ++a) {
        const SlotPlace &place = slot_places[a];
        if (place.word > 1) // the base and size are the range's own attributes
            words[place.word] |= (record.value(static_cast<AnsweredAttribute>(a)) & place.mask)
                                 << place.shift;
    }
    words[known_word] |= uint64_t{record.known_single} << known_single_shift |
                         uint64_t{record.known_many} << known_many_shift;
    seqlock_write(slot.version, [&] {
        for (int i = 0; i < slot_words; ++i)
            slot.words[i].store(words[i], std::memory_order_relaxed);
    });
}

bool PointerTable::put(const PointerRecord &record, uint64_t ptr)
{
    if (!make())
        return false;
    PointerSlot *bucket =
        slots_.load(std::memory_order_relaxed) + bucket_of(record.base) * bucket_slots;
    PointerSlot *target = nullptr;
    for (uint64_t i = 0; i < bucket_slots && !target; ++i)
        if (bucket[i].words[0].load(std::memory_order_relaxed) == record.base)
            target = &bucket[i];
    for (uint64_t i = 0; i < bucket_slots && !target; ++i)
        if (bucket[i].words[0].load(std::memory_order_relaxed) == 0)
            target = &bucket[i];
    if (!target) {
        // Full: the first slot's record goes, the others move up one, so
        // that the bucket stays in the order its records came in.
        for (uint64_t i = 0; i + 1 < bucket_slots; ++i) {
            PointerRecord moved;
            read(bucket[i + 1], bucket[i + 1].words[0].load(std::memory_order_relaxed), moved);
            write(bucket[i], moved);
        }
        target = &bucket[bucket_slots - 1];
    }
    write(*target, record);
    hint(record, ptr);
    return true;
}

void PointerTable::hint(const PointerRecord &record, uint64_t ptr)
{
    PointerSlot *slots = slots_.load(std::memory_order_acquire);
    if (!slots || record.base == 0)
        return;
    const uint64_t first = bucket_of(record.base) * bucket_slots;
    for (uint64_t i = first; i < first + bucket_slots; ++i) {
        if (slots[i].words[0].load(std::memory_order_relaxed) != record.base)
            continue;
        const int size = record.size >= (uint64_t{1} << page_shifts[0]) ? 0 : 1;
        hints_[size][hint_of(ptr, size)].store(static_cast<uint16_t>(i + 1),
                                               std::memory_order_relaxed);
        return;
    }
}

void PointerTable::forget(uint64_t base)
{
    PointerSlot *slots = slots_.load(std::memory_order_relaxed);
    if (!slots || base == 0)
        return;
    PointerSlot *bucket = slots + bucket_of(base) * bucket_slots;
    for (uint64_t i = 0; i < bucket_slots; ++i)
        if (bucket[i].words[0].load(std::memory_order_relaxed) == base)
            write(bucket[i], PointerRecord{});
}

} // namespace gdrhook
