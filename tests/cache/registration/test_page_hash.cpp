// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The page hash in front of the index (cache/registration/page_hash.h): on its own
// against a model, then inside the cache: hits, misses after an invalidation
// on another thread, large entries through the index, and a stress test
// that checks every hit against a buffer ID the test keeps per address.
#include "cache/registration/page_hash.h"
#include "fakes.h"

#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <thread>
#include <vector>

using namespace gdrhook;
using namespace gdrhook::testing;

namespace {

constexpr uint64_t page = 64 * KiB;

PageHashValue value_of(uint64_t start, uint64_t end, uint64_t id)
{
    return PageHashValue{start, end, id, id * 10, id * 100, static_cast<int32_t>(id)};
}

} // namespace

TEST_CASE("the page hash finds every entry it holds, on every page, and none it removed",
          "[page_hash]")
{
    PageHash hash(1); // the smallest table: 1024 slots, 512 pages at most
    REQUIRE(hash.capacity() == 1024);
    std::mt19937_64 rng(7);
    std::map<uint64_t, PageHashValue> model; // by id
    uint64_t next_id = 1;
    // Entries of 1 to 3 pages, some starting mid-page so that two share a
    // page; a full table forces long probe chains through removals.
    uint64_t cursor = 0x7f0000000000;
    for (int round = 0; round < 40; ++round) {
        while (hash.used() + 4 <= hash.capacity() / 2) { // 4: the most pages one spans
            uint64_t start = cursor + (rng() % 2) * 4096;
            uint64_t end = start + (1 + rng() % 3) * page - 8192;
            cursor = end + (rng() % 3) * page;
            PageHashValue v = value_of(start, end, next_id++);
            REQUIRE(hash.insert(v));
            model[v.id] = v;
        }
        // Remove about half, at random.
        for (auto it = model.begin(); it != model.end();) {
            if (rng() % 2) {
                hash.remove(it->second.start, it->second.end, it->first);
                it = model.erase(it);
            } else {
                ++it;
            }
        }
        uint64_t pages = 0;
        for (auto &[id, v] : model) {
            pages += ((v.end - 1) >> 16) - (v.start >> 16) + 1;
            for (uint64_t addr = v.start; addr < v.end; addr += 4096) {
                PageHashValue got;
                REQUIRE(hash.find(addr, addr + 1, got));
                REQUIRE(got.id == id);
                REQUIRE(got.handle == v.handle);
                REQUIRE(got.fd == v.fd);
            }
            PageHashValue got;
            REQUIRE_FALSE(hash.find(v.start, v.end + 1, got)); // past its end
        }
        REQUIRE(hash.used() == pages);
    }
    // Everything out: nothing found.
    for (auto &[id, v] : model)
        hash.remove(v.start, v.end, id);
    REQUIRE(hash.used() == 0);
    PageHashValue got;
    REQUIRE_FALSE(hash.find(0x7f0000000000, 0x7f0000000001, got));
}

TEST_CASE("the page hash refuses entries over its page limit and past its load limit",
          "[page_hash]")
{
    PageHash hash(1);
    REQUIRE_FALSE(hash.insert(value_of(0, (page_hash_max_pages + 1) * page, 1)));
    REQUIRE(hash.insert(value_of(0, page_hash_max_pages * page, 2)));
    uint64_t id = 3, at = 1ull << 40;
    while (hash.insert(value_of(at, at + page, id++)))
        at += page;
    REQUIRE(hash.used() == hash.capacity() / 2);
}

TEST_CASE("a small registration hits from a thread that never looked it up, without a pin",
          "[page_hash][cache]")
{
    Fixture f;
    for (int i = 0; i < 256; ++i)
        f.memory.allocate(0x100000000 + i * MiB, 64 * KiB);
    std::vector<Registration> first(256);
    for (int i = 0; i < 256; ++i)
        REQUIRE(f.cache->lookup(0x100000000 + i * MiB, 4096, first[i]).ok());
    REQUIRE(f.backend->pins == 256);
    // Catch's assertions stay on the test's thread: the other one counts.
    int wrong = 0;
    std::thread([&] {
        for (int i = 255; i >= 0; --i) {
            Registration again;
            HeldRegistration held;
            if (!f.cache->lookup(0x100000000 + i * MiB + 8192, 4096, again).ok() ||
                again.id != first[i].id || again.handle != first[i].handle ||
                again.buffer_id != first[i].buffer_id)
                ++wrong;
            if (!f.cache->get(0x100000000 + i * MiB + 4096, 4096, held).ok() ||
                held.reg.id != first[i].id)
                ++wrong;
            f.cache->put(held);
        }
    }).join();
    REQUIRE(wrong == 0);
    REQUIRE(f.backend->pins == 256);
    REQUIRE(f.cache->stats().misses == 256);
}

TEST_CASE("after invalidate returns on another thread, a lookup misses and pins the new buffer",
          "[page_hash][cache][threads]")
{
    Fixture f;
    const uint64_t base = 0x100000000;
    uint64_t old_id = f.memory.allocate(base, 64 * KiB);
    Registration reg;
    REQUIRE(f.cache->lookup(base, 4096, reg).ok());
    REQUIRE(reg.buffer_id == old_id);
    std::thread([&] {
        f.cache->invalidate(base, 64 * KiB);
        f.memory.free(base);
        f.cache->invalidate(base, 64 * KiB);
    }).join();
    uint64_t new_id = f.memory.allocate(base, 64 * KiB);
    // A thread whose hit cache never saw the entry goes to the hash first.
    Registration again;
    Status status;
    std::thread([&] { status = f.cache->lookup(base + 4096, 4096, again); }).join();
    REQUIRE(status.ok());
    REQUIRE(again.buffer_id == new_id);
    REQUIRE(again.id != reg.id);
    REQUIRE(f.cache->lookup(base, 4096, reg).ok());
    REQUIRE(reg.buffer_id == new_id);
    REQUIRE(f.backend->pins == 2);
}

TEST_CASE("entries larger than the page hash's limit are still found, through the index",
          "[page_hash][cache]")
{
    Fixture f;
    const uint64_t base = 0x100000000;
    const uint64_t size = (page_hash_max_pages + 8) * page;
    f.memory.allocate(base, size);
    Registration reg;
    REQUIRE(f.cache->lookup(base, 4096, reg).ok());
    REQUIRE(reg.length == size);
    int wrong = 0;
    std::thread([&] {
        for (uint64_t offset = 0; offset < size; offset += 60 * KiB) {
            Registration again;
            if (!f.cache->lookup(base + offset, 1, again).ok() || again.id != reg.id)
                ++wrong;
        }
    }).join();
    REQUIRE(wrong == 0);
    REQUIRE(f.backend->pins == 1);
    f.cache->invalidate(base, size);
    f.memory.free(base);
    f.memory.allocate(base, 64 * KiB);
    Registration small;
    REQUIRE(f.cache->lookup(base, 4096, small).ok());
    REQUIRE(small.id != reg.id);
    REQUIRE(f.backend->pins == 2);
}

TEST_CASE("lookups racing frees of small buffers never return a freed buffer's registration",
          "[page_hash][coherence][threads]")
{
    // Many 64 KiB buffers (one or two pages: all in the hash), lookups from
    // threads whose hit caches the frees keep emptying, so hits come from
    // the hash. The test keeps each address's buffer ID (0 while freed); a
    // lookup bracketed by two equal reads of it must return that buffer.
    Fixture f;
    constexpr int count = 512;
    constexpr uint64_t base = 0x300000000;
    auto addr_of = [](int i) { return base + i * 192 * KiB + (i % 3) * 16 * KiB; };
    std::vector<std::atomic<uint64_t>> ids(count);
    std::vector<std::unique_ptr<std::mutex>> owners;
    for (int i = 0; i < count; ++i) {
        owners.push_back(std::make_unique<std::mutex>());
        ids[i] = f.memory.allocate(addr_of(i), 64 * KiB);
    }
    std::atomic<uint64_t> checked{0}, stale{0}, frees{0}, held_dead{0};

    auto looker = [&](std::atomic<bool> &stop, unsigned seed) {
        std::mt19937 rng(seed);
        while (!stop.load(std::memory_order_relaxed)) {
            int i = rng() % count;
            uint64_t before = ids[i].load();
            if (!before)
                continue;
            uint64_t addr = addr_of(i) + (rng() % 16) * 4096;
            if (rng() % 4 == 0) {
                HeldRegistration held;
                Status status = f.cache->get(addr, 4096, held);
                uint64_t after = ids[i].load();
                if (status.ok()) {
                    if (!f.backend->is_live(held.reg.handle))
                        held_dead++;
                    if (before == after) {
                        checked++;
                        if (held.reg.buffer_id != before)
                            stale++;
                    }
                    f.cache->put(held);
                }
                continue;
            }
            Registration reg;
            Status status = f.cache->lookup(addr, 4096, reg);
            uint64_t after = ids[i].load();
            if (status.ok() && before == after) {
                checked++;
                if (reg.buffer_id != before)
                    stale++;
            }
        }
    };
    auto freer = [&](std::atomic<bool> &stop, unsigned seed) {
        std::mt19937 rng(seed);
        while (!stop.load(std::memory_order_relaxed)) {
            int i = rng() % count;
            std::lock_guard<std::mutex> lock(*owners[i]);
            f.cache->invalidate(addr_of(i), 64 * KiB);
            ids[i].store(0);
            f.memory.free(addr_of(i));
            f.cache->invalidate(addr_of(i), 64 * KiB);
            ids[i].store(f.memory.allocate(addr_of(i), 64 * KiB));
            frees++;
            std::this_thread::yield();
        }
    };
    run_stress(f, looker, 4, freer, 2, [&] { return frees >= 5000 && checked >= 100000; });

    INFO("checked " << checked << ", frees " << frees);
    REQUIRE(checked > 1000);
    REQUIRE(frees > 1000);
    REQUIRE(stale == 0);
    REQUIRE(held_dead == 0);
    f.drain();
    REQUIRE(f.backend->bad_unpins == 0);
    REQUIRE(f.backend->live_count() == f.cache->size());
}
