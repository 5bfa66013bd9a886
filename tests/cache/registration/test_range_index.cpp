// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The index against a plain std::map model: random inserts and removals,
// then every kind of query compared.
#include "cache/registration/range_index.h"

#include <catch2/catch.hpp>

#include <map>
#include <random>

using namespace gdrhook;

namespace {

CacheEntry *tag(uint64_t n)
{
    return reinterpret_cast<CacheEntry *>(static_cast<uintptr_t>(n * 16 + 16));
}

struct Model {
    std::map<uint64_t, std::pair<uint64_t, CacheEntry *>> ranges; // start -> (end, entry)

    CacheEntry *find(uint64_t addr, uint64_t end) const
    {
        auto it = ranges.upper_bound(addr);
        if (it == ranges.begin())
            return nullptr;
        --it;
        return end <= it->second.first ? it->second.second : nullptr;
    }
    bool free_for(uint64_t start, uint64_t end) const
    {
        for (auto &[s, v] : ranges)
            if (s < end && start < v.first)
                return false;
        return true;
    }
};

void drop(std::vector<void *> &retired)
{
    for (void *block : retired)
        index_free_block(block);
    retired.clear();
}

} // namespace

TEST_CASE("the index answers every query like a sorted map, through splits and removals", "[index]")
{
    std::mt19937_64 rng(42);
    Model model;
    std::vector<void *> retired;
    IndexRoot *root = index_empty();
    uint64_t next = 0;

    for (int step = 0; step < 20000; ++step) {
        bool insert = model.ranges.size() < 50 || rng() % 3 != 0;
        if (insert) {
            uint64_t start = (rng() % 100000) * 64;
            uint64_t end = start + 64 * (1 + rng() % 4);
            if (!model.free_for(start, end))
                continue;
            CacheEntry *entry = tag(++next);
            IndexRoot *fresh = index_rebuild(root, {}, IndexItem{start, end, entry}, retired);
            root = fresh;
            model.ranges[start] = {end, entry};
        } else {
            auto it = model.ranges.begin();
            std::advance(it, rng() % model.ranges.size());
            std::vector<IndexItem> removed{{it->first, it->second.first, it->second.second}};
            root = index_rebuild(root, removed, IndexItem{0, 0, nullptr}, retired);
            model.ranges.erase(it);
        }
        drop(retired);
        REQUIRE(root->entry_count == model.ranges.size());

        if (step % 97 == 0) {
            for (int q = 0; q < 200; ++q) {
                uint64_t addr = rng() % (100000 * 64 + 512);
                uint64_t end = addr + 1 + rng() % 200;
                const IndexRecord *found = index_find(root, addr, end);
                REQUIRE((found ? found->entry : nullptr) == model.find(addr, end));
                std::vector<IndexItem> got;
                index_overlapping(root, addr, end, got);
                std::vector<CacheEntry *> want;
                for (auto &[s, v] : model.ranges)
                    if (s < end && addr < v.first)
                        want.push_back(v.second);
                std::vector<CacheEntry *> got_entries;
                for (auto &item : got)
                    got_entries.push_back(item.entry);
                REQUIRE(got_entries == want);
                REQUIRE(index_overlaps(root, addr, end) == !want.empty());
            }
        }
    }
    // Leaves never exceed their capacity and are never empty.
    for (uint32_t i = 0; i < root->leaf_count; ++i) {
        REQUIRE(root->leaves[i]->count >= 1);
        REQUIRE(root->leaves[i]->count <= index_leaf_capacity);
        REQUIRE(root->firsts[i] == root->leaves[i]->starts[0]);
    }
    index_destroy(root);
}

TEST_CASE("a rebuild shares every leaf it does not change", "[index]")
{
    std::vector<void *> retired;
    IndexRoot *root = index_empty();
    for (uint64_t i = 0; i < 1000; ++i) {
        root = index_rebuild(root, {}, IndexItem{i * 100, i * 100 + 50, tag(i + 1)}, retired);
        drop(retired);
    }
    REQUIRE(root->leaf_count > 10);
    IndexRoot *before = root;
    std::vector<IndexLeaf *> old_leaves(before->leaves, before->leaves + before->leaf_count);
    std::vector<IndexItem> removed{{500 * 100, 500 * 100 + 50, tag(501)}};
    IndexRoot *after = index_rebuild(before, removed, IndexItem{0, 0, nullptr}, retired);
    // Retired: the old root and exactly one leaf.
    REQUIRE(retired.size() == 2);
    size_t shared = 0;
    for (uint32_t i = 0; i < after->leaf_count; ++i)
        shared += std::count(old_leaves.begin(), old_leaves.end(), after->leaves[i]);
    REQUIRE(shared == old_leaves.size() - 1);
    REQUIRE(index_find(after, 500 * 100, 500 * 100 + 1) == nullptr);
    REQUIRE(index_find(before, 500 * 100, 500 * 100 + 1)->entry == tag(501)); // old root intact
    drop(retired);
    index_destroy(after);
}
