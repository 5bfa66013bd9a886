// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/registration/range_index.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace gdrhook {
namespace {

IndexRoot *allocate_root(uint32_t leaf_count)
{
    // One block: header, keys, leaf pointers; freed with one free().
    size_t bytes = sizeof(IndexRoot) + leaf_count * (sizeof(uint64_t) + sizeof(IndexLeaf *));
    void *block = std::malloc(bytes);
    if (!block)
        throw std::bad_alloc();
    auto *root = static_cast<IndexRoot *>(block);
    auto *firsts = reinterpret_cast<uint64_t *>(root + 1);
    auto *leaves = reinterpret_cast<IndexLeaf **>(firsts + leaf_count);
    root->leaf_count = leaf_count;
    root->entry_count = 0;
    root->firsts = firsts;
    root->leaves = leaves;
    return root;
}

IndexLeaf *make_leaf(const IndexItem *items, size_t count)
{
    auto *leaf = static_cast<IndexLeaf *>(std::malloc(sizeof(IndexLeaf)));
    if (!leaf)
        throw std::bad_alloc();
    leaf->count = static_cast<uint32_t>(count);
    for (size_t i = 0; i < count; ++i) {
        leaf->starts[i] = items[i].start;
        IndexRecord &r = leaf->records[i];
        r.start = items[i].start;
        r.end = items[i].end;
        r.entry = items[i].entry;
        r.values = items[i].values;
        r.referenced.store(items[i].referenced, std::memory_order_relaxed);
    }
    return leaf;
}

long leaf_for(const IndexRoot *root, uint64_t start)
{
    long at = detail::last_not_above(root->firsts, root->leaf_count, start);
    return at < 0 ? 0 : at;
}

} // namespace

IndexRoot *index_empty()
{
    return allocate_root(0);
}

void index_free_block(void *block)
{
    std::free(block);
}

void index_destroy(IndexRoot *root)
{
    if (!root)
        return;
    for (uint32_t i = 0; i < root->leaf_count; ++i)
        std::free(root->leaves[i]);
    std::free(root);
}

void index_overlapping(const IndexRoot *root, uint64_t start, uint64_t end,
                       std::vector<IndexItem> &out)
{
    if (!root || root->leaf_count == 0 || start >= end)
        return;
    // The range that starts before `start` may still reach into it, so begin
    // at the last range starting at or before it.
    uint32_t i = static_cast<uint32_t>(leaf_for(root, start));
    for (; i < root->leaf_count; ++i) {
        const IndexLeaf *leaf = root->leaves[i];
        if (leaf->starts[0] >= end)
            break;
        for (uint32_t j = 0; j < leaf->count; ++j) {
            if (leaf->starts[j] >= end)
                return;
            const IndexRecord &r = leaf->records[j];
            if (r.end > start)
                out.push_back({leaf->starts[j], r.end, r.entry, r.values,
                               r.referenced.load(std::memory_order_relaxed)});
        }
    }
}

bool index_overlaps(const IndexRoot *root, uint64_t start, uint64_t end)
{
    if (!root || root->leaf_count == 0 || start >= end)
        return false;
    // Ranges do not overlap, so only the last one starting before `end`
    // can reach into [start, end).
    long leaf_at = detail::last_not_above(root->firsts, root->leaf_count, end - 1);
    if (leaf_at < 0)
        return false;
    const IndexLeaf *leaf = root->leaves[leaf_at];
    long at = detail::last_not_above(leaf->starts, leaf->count, end - 1);
    return at >= 0 && leaf->records[at].end > start;
}

IndexRoot *index_rebuild(const IndexRoot *old, const std::vector<IndexItem> &removed,
                         const IndexItem &inserted, std::vector<void *> &retired)
{
    const uint32_t old_count = old ? old->leaf_count : 0;

    // Which old leaves change.
    std::vector<uint32_t> touched;
    for (const IndexItem &item : removed)
        touched.push_back(static_cast<uint32_t>(leaf_for(old, item.start)));
    long insert_leaf = -1;
    if (inserted.entry && old_count)
        touched.push_back(static_cast<uint32_t>(insert_leaf = leaf_for(old, inserted.start)));
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());

    std::vector<std::pair<uint64_t, IndexLeaf *>> leaves;
    leaves.reserve(old_count + 2);
    std::vector<IndexItem> items;
    size_t next_touched = 0;
    for (uint32_t i = 0; i < old_count; ++i) {
        IndexLeaf *leaf = old->leaves[i];
        if (next_touched == touched.size() || touched[next_touched] != i) {
            leaves.emplace_back(old->firsts[i], leaf); // shared, unchanged
            continue;
        }
        ++next_touched;
        items.clear();
        for (uint32_t j = 0; j < leaf->count; ++j) {
            const IndexRecord &r = leaf->records[j];
            bool gone = std::any_of(removed.begin(), removed.end(),
                                    [&r](const IndexItem &x) { return x.entry == r.entry; });
            if (!gone)
                items.push_back({leaf->starts[j], r.end, r.entry, r.values,
                                 r.referenced.load(std::memory_order_relaxed)});
        }
        if (static_cast<long>(i) == insert_leaf) {
            auto at = std::lower_bound(items.begin(), items.end(), inserted.start,
                                       [](const IndexItem &a, uint64_t s) { return a.start < s; });
            items.insert(at, inserted);
        }
        retired.push_back(leaf);
        // Split an overfull leaf in two halves; drop an emptied one.
        size_t parts = items.size() > index_leaf_capacity ? 2 : (items.empty() ? 0 : 1);
        size_t done = 0;
        for (size_t p = 0; p < parts; ++p) {
            size_t take = (items.size() - done) / (parts - p);
            leaves.emplace_back(items[done].start, make_leaf(items.data() + done, take));
            done += take;
        }
    }
    if (inserted.entry && old_count == 0)
        leaves.emplace_back(inserted.start, make_leaf(&inserted, 1));

    IndexRoot *root = allocate_root(static_cast<uint32_t>(leaves.size()));
    auto *firsts = const_cast<uint64_t *>(root->firsts);
    auto *slots = const_cast<IndexLeaf **>(root->leaves);
    uint64_t entries = 0;
    for (size_t i = 0; i < leaves.size(); ++i) {
        firsts[i] = leaves[i].first;
        slots[i] = leaves[i].second;
        entries += leaves[i].second->count;
    }
    root->entry_count = entries;
    if (old)
        retired.push_back(const_cast<IndexRoot *>(old));
    return root;
}

} // namespace gdrhook
