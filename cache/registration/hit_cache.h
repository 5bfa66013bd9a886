// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A thread's hit cache: a small direct-mapped cache, in its own record
// (thread_records.h), of copies of registrations it hit, so that a hit
// takes no lock and writes nothing another thread reads.
//
// Invariants:
//  - A slot is valid while the cache's generation (published_state.h) has
//    not moved since the slot was filled. Writers move it only after the
//    index without the removed entries is published (release) and after
//    the page hash lost them; a lookup reads it with acquire, so a slot
//    that matches names an entry still in the index at that read.
//  - Only the owner reads or writes its slots and hash_seen.
//  - A slot falls through to the shared structures once every
//    hit_refresh_period hits, which keeps the entry's LRU bit fresh
//    without a write per hit.
//  - A hit the slot answers is counted in the slot (HitSlot::served()),
//    and banked into the record's counter before the slot is refreshed or
//    overwritten: stats() then counts every hit exactly once.
//  - Verify mode fills no slot, so that a hit needs no test of the mode:
//    every hit then goes past the hit cache and is checked.
#pragma once

#include "cache/registration/thread_records.h"

#include <cstdint>

namespace gdrhook {

class HitCache {
public:
    explicit HitCache(bool verify) : verify_(verify) {}

    // The thread's cached copy covering [addr, end) made in generation gen.
    static HitSlot *find(ThreadRecord *record, uint64_t addr, uint64_t end, uint64_t gen)
    {
        HitSlot *set = &record->slots[set_index(addr) * hit_ways];
        for (uint32_t way = 0; way < hit_ways; ++way)
            if (set[way].gen == gen && set[way].covers(addr, end))
                return &set[way];
        return nullptr;
    }

    // Caches a copy of `found`, valid in generation gen.
    void fill(ThreadRecord *record, uint64_t addr, const PinnedRange &found, uint64_t gen) const
    {
        if (verify_)
            return;
        HitSlot *set = &record->slots[set_index(addr) * hit_ways];
        // Most recent in way 0; the one it displaces moves to way 1.
        // A slot's count goes with it; the one overwritten is banked.
        if (set[0].reg.id != found.id) {
            bank_slot_hits(record, set[1]);
            set[1] = set[0];
        } else {
            bank_slot_hits(record, set[0]);
        }
        set[0].fill(Registration::of(found), gen);
    }

    // A hit in the page hash: an expired hit-cache slot starts over (the
    // hash marked the entry referenced); an entry hit twice in a row in its
    // set is hot and gets a hit-cache slot. Random access pays one store
    // instead of a slot's copy.
    void note_hash_hit(ThreadRecord *record, uint64_t addr, const PinnedRange &value, uint64_t gen,
                       HitSlot *slot) const
    {
        if (slot) {
            bank_slot_hits(record, *slot);
            return;
        }
        uint64_t &seen = record->hash_seen[set_index(addr)];
        if (seen == value.id)
            fill(record, addr, value, gen);
        else
            seen = value.id;
    }

private:
    static uint32_t set_index(uint64_t addr)
    {
        // The product's top log2(hit_set_count) bits: every set is used.
        static_assert((hit_set_count & (hit_set_count - 1)) == 0, "a power of two");
        constexpr int set_bits = __builtin_ctz(hit_set_count);
        return static_cast<uint32_t>(((addr >> 16) * 0x9E3779B97F4A7C15ull) >> (64 - set_bits));
    }

    const bool verify_;
};

} // namespace gdrhook
