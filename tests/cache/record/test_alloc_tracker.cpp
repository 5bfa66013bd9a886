// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The allocation tracker's two levels (alloc_tracker.h): whatever level an
// allocation lands in, it is found, removed once, counted, and taken down
// with its context or its mapping range.
#include "cache/record/alloc_tracker.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

using namespace gdrhook;

namespace {

// More allocations than the front has entries: some must collide there
// and live in the shards.
constexpr int many = 20000;

Allocation device_allocation(uint64_t addr, uint64_t size, uint64_t context = 0)
{
    Allocation a;
    a.addr = addr;
    a.size = size;
    a.context = context;
    a.dev = 0;
    a.kind = MemoryKind::device;
    return a;
}

uint64_t address_of(int i)
{
    return 0x7f0000000000ull + uint64_t(i) * (2 << 20);
}

} // namespace

TEST_CASE("a tracked allocation is removed once, with what was recorded")
{
    AllocTracker tracker;
    CHECK_FALSE(tracker.remove(MemoryKind::device, 0x1000));
    tracker.insert(device_allocation(0x200000, 4096, 7));
    auto found = tracker.find(MemoryKind::device, 0x200000);
    REQUIRE(found);
    CHECK(found->size == 4096);
    auto removed = tracker.remove(MemoryKind::device, 0x200000);
    REQUIRE(removed);
    CHECK(removed->size == 4096);
    CHECK(removed->context == 7);
    CHECK_FALSE(tracker.remove(MemoryKind::device, 0x200000));
    CHECK(tracker.size() == 0);
}

TEST_CASE("inserting an address again replaces what was tracked for it")
{
    AllocTracker tracker;
    tracker.insert(device_allocation(0x400000, 1));
    tracker.insert(device_allocation(0x400000, 2));
    CHECK(tracker.size() == 1);
    auto removed = tracker.remove(MemoryKind::device, 0x400000);
    REQUIRE(removed);
    CHECK(removed->size == 2);
    CHECK_FALSE(tracker.remove(MemoryKind::device, 0x400000));
}

TEST_CASE("handles and addresses with the same value are tracked apart")
{
    AllocTracker tracker;
    Allocation handle = device_allocation(0x600000, 3);
    handle.kind = MemoryKind::vmm_physical;
    tracker.insert(handle);
    tracker.insert(device_allocation(0x600000, 5));
    CHECK(tracker.size() == 2);
    CHECK(tracker.remove(MemoryKind::vmm_physical, 0x600000)->size == 3);
    CHECK(tracker.remove(MemoryKind::device, 0x600000)->size == 5);
}

TEST_CASE("allocations that collide in the front are found in the shards")
{
    AllocTracker tracker;
    for (int i = 0; i < many; ++i)
        tracker.insert(device_allocation(address_of(i), uint64_t(i) + 1));
    CHECK(tracker.size() == size_t(many));
    int wrong = 0;
    for (int i = 0; i < many; i += 2) {
        auto found = tracker.remove(MemoryKind::device, address_of(i));
        wrong += !found || found->size != uint64_t(i) + 1;
    }
    CHECK(wrong == 0);
    CHECK(tracker.size() == size_t(many / 2));
    for (int i = 1; i < many; i += 2)
        wrong += tracker.find(MemoryKind::device, address_of(i))->size != uint64_t(i) + 1;
    CHECK(wrong == 0);
}

TEST_CASE("a context teardown takes its allocations from both levels, and only those")
{
    AllocTracker tracker;
    for (int i = 0; i < many; ++i)
        tracker.insert(device_allocation(address_of(i), 1, i % 3 == 0 ? 11 : 22));
    auto taken = tracker.remove_context(11);
    CHECK(taken.size() == size_t((many + 2) / 3));
    int wrong = 0;
    for (const Allocation &a : taken)
        wrong += a.context != 11;
    CHECK(wrong == 0);
    CHECK(tracker.size() == size_t(many - taken.size()));
    CHECK(tracker.remove_context(11).empty());
    CHECK(tracker.remove_context(22).size() == size_t(many - taken.size()));
    CHECK(tracker.size() == 0);
}

TEST_CASE("an unmap takes every mapping inside its range, from both levels")
{
    AllocTracker tracker;
    const uint64_t base = address_of(0);
    const uint64_t chunk = 2 << 20;
    for (int i = 0; i < many; ++i) {
        Allocation mapping = device_allocation(base + uint64_t(i) * chunk, chunk);
        mapping.kind = MemoryKind::vmm_mapping;
        tracker.insert(mapping);
    }
    tracker.insert(device_allocation(base - chunk, chunk)); // not a mapping: stays
    // Mappings 100 .. 5099, and the device allocation just below is outside.
    auto taken = tracker.remove_mappings_in(base + 100 * chunk, 5000 * chunk);
    CHECK(taken.size() == 5000);
    int outside = 0;
    for (const Allocation &a : taken)
        outside += a.addr < base + 100 * chunk || a.addr >= base + 5100 * chunk;
    CHECK(outside == 0);
    CHECK(tracker.size() == size_t(many - 5000 + 1));
    CHECK(tracker.find(MemoryKind::device, base - chunk));
}

TEST_CASE("threads inserting and removing at once lose nothing")
{
    AllocTracker tracker;
    constexpr int threads = 8;
    constexpr int rounds = 20000;
    std::atomic<int> wrong{0};
    std::atomic<bool> done{false};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            // Each thread holds a few allocations at a time and frees them
            // in turn, as a program with temporary buffers does.
            for (int r = 0; r < rounds; ++r) {
                const uint64_t addr = address_of(t * 64 + r % 64);
                tracker.insert(device_allocation(addr, uint64_t(t + 1), uint64_t(t + 100)));
                if (r >= 3) {
                    auto found =
                        tracker.remove(MemoryKind::device, address_of(t * 64 + (r - 3) % 64));
                    if (!found || found->size != uint64_t(t + 1))
                        ++wrong;
                }
            }
            for (int r = rounds - 3; r < rounds; ++r)
                if (!tracker.remove(MemoryKind::device, address_of(t * 64 + r % 64)))
                    ++wrong;
        });
    }
    // Whole-table walks meanwhile: a teardown of a context nobody uses.
    std::thread walker([&] {
        while (!done.load())
            if (!tracker.remove_context(1).empty())
                ++wrong;
    });
    for (auto &w : workers)
        w.join();
    done = true;
    walker.join();
    CHECK(wrong.load() == 0);
    CHECK(tracker.size() == 0);
}
