// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Stress with checkers: many threads look up, hold, free and reallocate the
// same addresses (VA reuse, as the driver does) while a worker drains.
//
//  - Coherence (docs/design.md, property 1): a lookup that starts after a free
//    (both invalidate calls) returned never gets the old buffer's
//    registration. The checker reads the buffer ID before and after the
//    lookup; when both reads agree, no free overlapped the lookup and the
//    registration must carry that ID.
//  - Holds: while a test thread holds a registration (between get and
//    put), the backend must never be asked to unpin it.
//  - Every pin is unpinned exactly once: no double unpin, none left over.
#include "fakes.h"

#include <catch2/catch.hpp>

#include <random>
#include <thread>
#include <vector>

using namespace gdrhook;
using namespace gdrhook::testing;

namespace {

constexpr uint64_t arena = 0x200000000;
constexpr int slots = 64;
constexpr uint64_t slot_size = 256 * KiB;

uint64_t slot_base(int i)
{
    return arena + i * MiB;
} // gaps between slots

struct Arena {
    FakeMemory &memory;
    std::vector<std::unique_ptr<std::mutex>> owners; // one freer per slot at a time
    std::vector<std::atomic<uint64_t>> ids;          // 0 while freed

    explicit Arena(FakeMemory &m) : memory(m), ids(slots)
    {
        for (int i = 0; i < slots; ++i) {
            owners.push_back(std::make_unique<std::mutex>());
            ids[i] = memory.allocate(slot_base(i), slot_size);
        }
    }

    // What the hook does around cuMemFree, then the next cuMemAlloc of the
    // same size returning the same address.
    void free_and_reallocate(RegistrationCache &cache, int i)
    {
        std::lock_guard<std::mutex> lock(*owners[i]);
        cache.invalidate(slot_base(i), slot_size); // begin_free
        ids[i].store(0);
        memory.free(slot_base(i));
        cache.invalidate(slot_base(i), slot_size); // end_free
        uint64_t id = memory.allocate(slot_base(i), slot_size);
        ids[i].store(id);
    }
};

} // namespace

TEST_CASE("no lookup returns a registration of memory freed before it started",
          "[coherence][threads]")
{
    Fixture f([](CacheOptions &o) { o.max_entries = 48; }); // evictions too
    Arena arena_state(f.memory);
    std::atomic<uint64_t> checked{0}, stale{0}, lookups{0}, frees{0};

    auto looker = [&](std::atomic<bool> &stop, unsigned seed) {
        std::mt19937 rng(seed);
        while (!stop.load(std::memory_order_relaxed)) {
            int i = rng() % slots;
            uint64_t before = arena_state.ids[i].load();
            if (!before)
                continue;
            uint64_t offset = (rng() % 64) * 4096;
            Registration reg;
            Status status = f.cache->lookup(slot_base(i) + offset, 4096, reg);
            uint64_t after = arena_state.ids[i].load();
            lookups++;
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
            arena_state.free_and_reallocate(*f.cache, rng() % slots);
            frees++;
            std::this_thread::yield();
        }
    };
    run_stress(f, looker, 4, freer, 2, [&] { return frees >= 5000 && checked >= 50000; });

    INFO("lookups " << lookups << ", checked " << checked << ", frees " << frees);
    REQUIRE(checked > 1000);
    REQUIRE(frees > 1000);
    REQUIRE(stale == 0);
    f.drain();
    // Every pin not in the index was unpinned exactly once.
    REQUIRE(f.backend->bad_unpins == 0);
    REQUIRE(f.backend->live_count() == f.cache->size());
    CacheStats s = f.cache->stats();
    REQUIRE(s.invalidated > 0);
}

TEST_CASE("a held registration is never unpinned while held, under frees and evictions",
          "[coherence][threads]")
{
    Fixture f([](CacheOptions &o) { o.max_entries = 32; });
    Arena arena_state(f.memory);
    // Handles the test threads hold right now, with a count each.
    std::mutex held_mutex;
    std::map<uint64_t, int> held_now;
    f.backend->unpin_allowed = [&](uint64_t handle) {
        std::lock_guard<std::mutex> lock(held_mutex);
        return held_now.count(handle) == 0;
    };
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> gets{0}, dead_while_held{0}, frees{0};

    auto holder = [&](unsigned seed) {
        std::mt19937 rng(seed);
        std::vector<HeldRegistration> mine;
        while (!stop.load(std::memory_order_relaxed)) {
            int i = rng() % slots;
            HeldRegistration held;
            if (f.cache->get(slot_base(i), 4096, held).ok()) {
                gets++;
                {
                    std::lock_guard<std::mutex> lock(held_mutex);
                    held_now[held.reg.handle]++;
                }
                mine.push_back(held);
            }
            // Hold up to 12 at once (more than the hold slots), release
            // in random order, sometimes on another thread.
            while (mine.size() > (rng() % 12)) {
                size_t k = rng() % mine.size();
                HeldRegistration h = mine[k];
                mine.erase(mine.begin() + k);
                if (!f.backend->is_live(h.reg.handle))
                    dead_while_held++;
                {
                    std::lock_guard<std::mutex> lock(held_mutex);
                    if (--held_now[h.reg.handle] == 0)
                        held_now.erase(h.reg.handle);
                }
                if (rng() % 8 == 0)
                    std::thread([&f, h]() mutable { f.cache->put(h); }).join();
                else
                    f.cache->put(h);
            }
        }
        for (auto &h : mine) {
            {
                std::lock_guard<std::mutex> lock(held_mutex);
                if (--held_now[h.reg.handle] == 0)
                    held_now.erase(h.reg.handle);
            }
            f.cache->put(h);
        }
    };
    auto freer = [&](unsigned seed) {
        std::mt19937 rng(seed);
        while (!stop.load(std::memory_order_relaxed)) {
            arena_state.free_and_reallocate(*f.cache, rng() % slots);
            frees++;
            std::this_thread::yield();
        }
    };
    auto worker = [&] {
        while (!stop.load(std::memory_order_relaxed)) {
            f.drain();
            std::this_thread::yield();
        }
    };

    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 4; ++t)
        threads.emplace_back(holder, 300 + t);
    threads.emplace_back(freer, 400);
    threads.emplace_back(worker);
    run_until([&] { return frees >= 3000 && gets >= 20000; }, stop);
    for (auto &t : threads)
        t.join();

    REQUIRE(gets > 1000);
    REQUIRE(frees > 1000);
    REQUIRE(f.backend->forbidden_unpins == 0);
    REQUIRE(dead_while_held == 0);
    REQUIRE(f.backend->bad_unpins == 0);
    f.drain();
    REQUIRE(f.backend->live_count() == f.cache->size());
}

TEST_CASE("threads that come and go reuse their records and keep the counts", "[cache][threads]")
{
    Fixture f;
    f.memory.allocate(0x300000000, MiB);
    std::atomic<int> failures{0}; // Catch's assertions are not thread-safe
    for (int round = 0; round < 50; ++round) {
        std::vector<std::thread> pool;
        for (int t = 0; t < 4; ++t)
            pool.emplace_back([&] {
                Registration reg;
                for (int i = 0; i < 100; ++i)
                    failures += !f.cache->lookup(0x300000000 + i * 64, 64, reg).ok();
            });
        for (auto &t : pool)
            t.join();
    }
    REQUIRE(failures == 0);
    CacheStats s = f.cache->stats();
    REQUIRE(s.hits + s.misses == 50 * 4 * 100);
    REQUIRE(f.backend->pins == 1);
}

TEST_CASE("two caches used by one thread keep separate records", "[cache]")
{
    Fixture a, b;
    a.memory.allocate(0x400000000, MiB);
    b.memory.allocate(0x400000000, MiB);
    Registration ra, rb;
    for (int i = 0; i < 100; ++i) {
        REQUIRE(a.cache->lookup(0x400000000, 10, ra).ok());
        REQUIRE(b.cache->lookup(0x400000000, 10, rb).ok());
    }
    a.cache->invalidate(0x400000000, MiB);
    REQUIRE(a.cache->lookup(0x400000000, 10, ra).ok());
    REQUIRE(b.cache->lookup(0x400000000, 10, rb).ok());
    REQUIRE(a.backend->pins == 2);
    REQUIRE(b.backend->pins == 1);
    REQUIRE(a.cache->stats().hits == 99);
    REQUIRE(b.cache->stats().hits == 100);
}
