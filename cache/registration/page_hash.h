// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A lock-free accelerator in front of the registration cache's index: an
// open-addressing hash (linear probing, power-of-two size) keyed by the
// 64 KiB page number, one cache line a slot, holding a copy of everything a
// hit returns. A random hit over many entries reads one line here instead of
// the index's root keys, a leaf's keys and a record.
//
// Invariants:
//  - only small entries are here (at most page_hash_max_pages pages), one
//    slot for each page they touch; larger ones are found through the index;
//  - every entry here is also in the index: writers insert after publishing
//    the index with it and remove before publishing the index without it,
//    and both before the cache's generation moves, so an entry is gone from
//    here before invalidate() returns (coherence, docs/design.md);
//  - a slot's key and values change only inside its seqlock write
//    (cache/prim/seqlock.h: version odd), so a reader that sees the same even version before and after its
//    reads has a consistent copy of one live entry. Every field is an atomic
//    read and written relaxed; the version orders them (fences);
//  - removal shifts the rest of a probe chain back (no tombstones). A reader
//    that races a shift may miss an entry that is present: it then searches
//    the index. A miss here is never wrong; only a hit must be.
//
// Writers are serialized by the cache's mutex. The table is allocated on
// the first insert (not at load time) and lives as long as the cache.
#pragma once

#include "cache/prim/hot_path.h"
#include "cache/prim/seqlock.h"
#include "cache/registration/pinned_range.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gdrhook {

inline constexpr uint64_t page_hash_page_shift = 16; // 64 KiB, the cache granule
// Entries of up to 4 MiB: the many small buffers a random access pattern
// spreads over. Larger ones are few, and the index finds them.
inline constexpr uint64_t page_hash_max_pages = 64;
// A reader gives up (and searches the index) after this many slots.
inline constexpr uint32_t page_hash_max_probe = 32;

// What a hit returns.
using PageHashValue = PinnedRange;

// Members without initializers: the table is zeroed memory (key 0 = empty)
// and constructing it touches no page.
struct alignas(64) PageHashSlot {
    std::atomic<uint64_t> version; // seqlock: odd while a writer changes the slot
    std::atomic<uint64_t> key;     // page number + 1; 0 = empty
    std::atomic<uint64_t> start, end, id, buffer_id, handle;
    std::atomic<int32_t> fd;
    // The LRU second-chance bit of the entry, set by readers when clear;
    // writers read and clear it when they pick eviction victims.
    std::atomic<uint8_t> referenced;
    std::atomic<uint8_t> peer_setup_deferred;
};
static_assert(sizeof(PageHashSlot) == 64, "one cache line a slot");

class PageHash {
public:
    // Room for `entries` entries (0: no budget, 65,536) of up to two pages
    // each at load factor 0.5; entries past that are found through the index.
    explicit PageHash(uint64_t entries);
    ~PageHash();
    PageHash(const PageHash &) = delete;
    PageHash &operator=(const PageHash &) = delete;

    // Readers, lock-free: the entry containing [addr, end), when it is here.
    bool find(uint64_t addr, uint64_t end, PageHashValue &out) const;

    // Writers (serialized). insert() adds a slot for every page of the entry
    // and returns true, or adds nothing and returns false (too large, or the
    // table is at its load limit). remove() takes out the slots insert() added.
    bool insert(const PageHashValue &value);
    void remove(uint64_t start, uint64_t end, uint64_t id);
    // Whether a reader marked the entry since the last call; clears the mark.
    bool take_referenced(uint64_t start, uint64_t end, uint64_t id);

    uint64_t capacity() const { return mask_ + 1; }
    uint64_t used() const { return used_; }

private:
    static uint64_t first_page(uint64_t start) { return start >> page_hash_page_shift; }
    static uint64_t last_page(uint64_t end) { return (end - 1) >> page_hash_page_shift; }
    uint64_t home(uint64_t page) const
    {
        // Fibonacci hashing: the product's top bits, shifted down.
        return ((page * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
    }
    // The slot's values, relaxed: callers validate or hold the writer's role.
    static PageHashValue read(const PageHashSlot &slot)
    {
        PageHashValue v;
        v.start = slot.start.load(std::memory_order_relaxed);
        v.end = slot.end.load(std::memory_order_relaxed);
        v.id = slot.id.load(std::memory_order_relaxed);
        v.buffer_id = slot.buffer_id.load(std::memory_order_relaxed);
        v.handle = slot.handle.load(std::memory_order_relaxed);
        v.fd = slot.fd.load(std::memory_order_relaxed);
        v.peer_setup_deferred = slot.peer_setup_deferred.load(std::memory_order_relaxed);
        return v;
    }
    PageHashSlot *slot_of(uint64_t page, uint64_t id) const;
    void write(PageHashSlot &slot, uint64_t key, const PageHashValue &value, uint8_t referenced);
    void erase(uint64_t at);

    std::atomic<PageHashSlot *> slots_{nullptr};
    const uint64_t mask_;
    const int shift_;
    uint64_t used_ = 0; // writers only
};

// Inlined into the lookup's and get()'s paths past the hit cache: as a
// call it cost a random hit 22.0 ns against 18.8 inlined (gdrhook-bench,
// 65,536 entries, the 2-core build VM, three alternating runs).
GDRHOOK_ALWAYS_INLINE bool PageHash::find(uint64_t addr, uint64_t end, PageHashValue &out) const
{
    // acquire: pairs with the release that published the zeroed table.
    PageHashSlot *slots = slots_.load(std::memory_order_acquire);
    if (!slots)
        return false;
    const uint64_t key = (addr >> page_hash_page_shift) + 1;
    uint64_t at = home(key - 1);
    for (uint32_t probe = 0; probe < page_hash_max_probe; ++probe, at = (at + 1) & mask_) {
        PageHashSlot &slot = slots[at];
        const uint64_t before = seqlock_read_begin(slot.version);
        const uint64_t k = slot.key.load(std::memory_order_relaxed);
        if (k == 0)
            return false; // the end of the chain (or a slot being written: a miss is safe)
        if (k != key)
            continue;
        const PageHashValue v = read(slot);
        if (!seqlock_read_valid(slot.version, before))
            return false; // a writer was here: let the index answer
        if (v.start <= addr && end <= v.end) {
            // Only when clear, so a hot slot's line stays shared.
            if (!slot.referenced.load(std::memory_order_relaxed))
                slot.referenced.store(1, std::memory_order_relaxed);
            out = v;
            return true;
        }
        // Another entry touching the same page: keep probing.
    }
    return false;
}

} // namespace gdrhook
