// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The registration cache's index: non-overlapping ranges [start, end) sorted
// by start, as an immutable two-level structure (a root array of leaves of
// at most 16 ranges each) that readers search with no lock and no write.
// A leaf holds the registration's values next to its range, so a hit reads
// the root's keys, one leaf's keys and one record: no pointer to chase.
//
// Invariants:
//  - a published root and the leaves it points to are never modified;
//  - ranges in one root do not overlap, and are sorted across leaves;
//  - root->firsts[i] == root->leaves[i]->starts[0]; no leaf is empty.
//
// Writers (serialized by the cache's mutex) build a new root that shares
// every untouched leaf with the old one: an insert or removal copies one
// leaf (under 1 KiB) and the root's arrays (16 bytes a leaf), not the whole
// index, so the free path that removes an entry stays in the microseconds
// even with 65,536 entries. The replaced root and leaves are handed back to
// the caller, who frees them once no reader can still be looking at them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gdrhook {

struct CacheEntry;

// 16 keys are two cache lines: a random lookup misses on few lines.
inline constexpr uint32_t index_leaf_capacity = 16;

// What a hit returns, copied from the entry when the leaf is built.
struct IndexValues {
    uint64_t id = 0;
    uint64_t buffer_id = 0;
    uint64_t handle = 0;
    int32_t fd = -1;
    bool peer_setup_deferred = false;
};

struct IndexRecord {
    uint64_t start; // repeated from the leaf's keys: the record is self-contained
    uint64_t end;
    CacheEntry *entry;
    IndexValues values;
    // The one mutable field of a published leaf: the LRU second-chance bit.
    // Readers set it (only when clear, so a hot record's line stays shared)
    // on the line they already read; writers clear it and carry it over
    // when they copy the leaf.
    mutable std::atomic<uint8_t> referenced;
};

struct IndexLeaf {
    uint32_t count;
    uint64_t starts[index_leaf_capacity];
    IndexRecord records[index_leaf_capacity];
};

struct IndexRoot {
    uint32_t leaf_count;
    uint64_t entry_count;
    const uint64_t *firsts;   // leaf_count keys, in the same block
    IndexLeaf *const *leaves; // leaf_count leaves
};

struct IndexItem {
    uint64_t start;
    uint64_t end;
    CacheEntry *entry;
    IndexValues values{};
    uint8_t referenced = 0;
};

namespace detail {
// Index of the last key <= value in keys[0..count), or -1.
inline long last_not_above(const uint64_t *keys, size_t count, uint64_t value)
{
    if (count == 0 || keys[0] > value)
        return -1;
    // Branch-free halving: the comparison becomes a conditional move, so a
    // random lookup does not pay for mispredicted branches.
    const uint64_t *base = keys;
    size_t n = count;
    while (n > 1) {
        size_t half = n / 2;
        base = base[half] <= value ? base + half : base;
        n -= half;
    }
    return base - keys;
}
} // namespace detail

// The record whose range contains [addr, end), or null. Readers call this on
// a root they loaded with acquire inside their read section.
inline const IndexRecord *index_find(const IndexRoot *root, uint64_t addr, uint64_t end)
{
    if (!root)
        return nullptr;
    long leaf_at = detail::last_not_above(root->firsts, root->leaf_count, addr);
    if (leaf_at < 0)
        return nullptr;
    const IndexLeaf *leaf = root->leaves[leaf_at];
    long at = detail::last_not_above(leaf->starts, leaf->count, addr);
    if (at < 0 || end > leaf->records[at].end)
        return nullptr;
    return &leaf->records[at];
}

// Every entry overlapping [start, end), in address order (writers only).
void index_overlapping(const IndexRoot *root, uint64_t start, uint64_t end,
                       std::vector<IndexItem> &out);

// Whether any range overlaps [start, end) (lock-free readers too).
bool index_overlaps(const IndexRoot *root, uint64_t start, uint64_t end);

// A new root: `old` without the `removed` items (which must be present),
// plus `inserted` if its entry is not null (it must not overlap what stays).
// The root and leaves that the new one no longer uses are appended to
// `retired`; free each with index_free_block once readers are done.
IndexRoot *index_rebuild(const IndexRoot *old, const std::vector<IndexItem> &removed,
                         const IndexItem &inserted, std::vector<void *> &retired);

IndexRoot *index_empty();
void index_free_block(void *block);
// Frees a root and all its leaves (teardown, no readers left).
void index_destroy(IndexRoot *root);

// Calls f(item) for every range in address order (writers, tests).
template <typename F> void index_for_each(const IndexRoot *root, F &&f)
{
    if (!root)
        return;
    for (uint32_t i = 0; i < root->leaf_count; ++i) {
        const IndexLeaf *leaf = root->leaves[i];
        for (uint32_t j = 0; j < leaf->count; ++j)
            f(IndexItem{leaf->starts[j], leaf->records[j].end, leaf->records[j].entry,
                        leaf->records[j].values,
                        leaf->records[j].referenced.load(std::memory_order_relaxed)});
    }
}

} // namespace gdrhook
