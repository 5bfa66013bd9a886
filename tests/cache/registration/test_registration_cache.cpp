// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The registration cache's behaviours one at a time, over fake memory and a
// fake backend (tests/cache/fakes.h).
#include "fakes.h"

#include <catch2/catch.hpp>

#include <condition_variable>
#include <thread>
#include <vector>

using namespace gdrhook;
using namespace gdrhook::testing;

TEST_CASE("a miss pins once and later hits return the same registration without pinning", "[cache]")
{
    Fixture f;
    f.memory.allocate(0x10000000, 4 * MiB);
    Registration first, again;
    REQUIRE(f.cache->lookup(0x10000000 + 123, 4096, first).ok());
    REQUIRE(f.backend->pins == 1);
    for (int i = 0; i < 1000; ++i) {
        REQUIRE(f.cache->lookup(0x10000000 + (i * 4096) % (4 * MiB - 4096), 4096, again).ok());
        REQUIRE(again.id == first.id);
        REQUIRE(again.handle == first.handle);
    }
    REQUIRE(f.backend->pins == 1);
    CacheStats s = f.cache->stats();
    REQUIRE(s.hits == 1000);
    REQUIRE(s.misses == 1);
}

// A hit the thread's hit cache answers is counted in its slot, not in the
// record (hit_cache.h); these hold stats() to every lookup counted once, as
// slots fall through, are refreshed, displaced and handed to another thread.
TEST_CASE("stats() counts every hit once, whichever slot answered it", "[cache]")
{
    Fixture f;
    SECTION("hits past several refresh periods, small and large entries")
    {
        // 64 KiB: refreshed from the page hash; 16 MiB: from the index.
        f.memory.allocate(0x10000000, 64 * KiB);
        f.memory.allocate(0x20000000, 16 * MiB);
        Registration reg;
        const int rounds = 5 * static_cast<int>(hit_refresh_period) + 7;
        for (int i = 0; i < rounds; ++i) {
            REQUIRE(f.cache->lookup(0x10000000, 64, reg).ok());
            REQUIRE(f.cache->lookup(0x20000000 + 4096, 64, reg).ok());
        }
        CacheStats s = f.cache->stats();
        REQUIRE(s.misses == 2);
        REQUIRE(s.hits == 2 * uint64_t(rounds) - 2);
    }
    SECTION("more buffers than the hit cache has slots, visited in turn")
    {
        // Every pass displaces slots (two ways a set): what a displaced or
        // overwritten slot answered must reach the counter.
        const uint64_t buffers = 4 * hit_set_count * hit_ways;
        for (uint64_t b = 0; b < buffers; ++b)
            f.memory.allocate(0x100000000 + b * 128 * KiB, 64 * KiB);
        Registration reg;
        const uint64_t passes = 6;
        for (uint64_t pass = 0; pass < passes; ++pass)
            for (uint64_t b = 0; b < buffers; ++b)
                for (int again = 0; again < 3; ++again)
                    REQUIRE(f.cache->lookup(0x100000000 + b * 128 * KiB, 64, reg).ok());
        CacheStats s = f.cache->stats();
        REQUIRE(s.misses == buffers);
        REQUIRE(s.hits == passes * buffers * 3 - buffers);
    }
    SECTION("stats() from another thread never counts a hit twice")
    {
        f.memory.allocate(0x30000000, 64 * KiB);
        std::atomic<uint64_t> done{0};
        std::atomic<bool> stop{false};
        std::thread looker([&] {
            Registration reg;
            while (!stop.load(std::memory_order_relaxed)) {
                f.cache->lookup(0x30000000, 64, reg);
                done.fetch_add(1, std::memory_order_seq_cst);
            }
        });
        bool over = false;
        for (int i = 0; i < 2000 && !over; ++i) {
            CacheStats s = f.cache->stats();
            // One lookup may be counted before `done` says it is done.
            over = s.hits + s.misses > done.load(std::memory_order_seq_cst) + 1;
        }
        stop = true;
        looker.join();
        REQUIRE_FALSE(over);
        CacheStats s = f.cache->stats();
        REQUIRE(s.hits + s.misses == done.load());
    }
}

TEST_CASE("a known allocation is pinned whole; an unknown range is rounded to 64 KiB", "[cache]")
{
    SECTION("widened to the allocation")
    {
        Fixture f;
        f.memory.allocate(0x20000000, 3 * MiB + 8 * KiB);
        Registration reg;
        REQUIRE(f.cache->lookup(0x20000000 + MiB, 100, reg).ok());
        REQUIRE(reg.base == 0x20000000);
        REQUIRE(reg.length == 3 * MiB + 8 * KiB);
        REQUIRE(reg.offset_of(0x20000000 + MiB) == MiB);
    }
    SECTION("rounded to GPU pages")
    {
        Fixture f([](CacheOptions &o) { o.allocation_of = nullptr; });
        f.memory.allocate(0x30000000, 8 * MiB);
        Registration reg;
        REQUIRE(f.cache->lookup(0x30000000 + 70 * KiB, 100 * KiB, reg).ok());
        REQUIRE(reg.base == 0x30000000 + 64 * KiB);
        REQUIRE(reg.length == 128 * KiB); // [64 KiB, 192 KiB)
    }
    SECTION("rounding past the allocation falls back to the pages asked for")
    {
        Fixture f([](CacheOptions &o) { o.allocation_of = nullptr; });
        f.memory.allocate(0x40000000 + 4 * KiB, 20 * KiB);
        Registration reg;
        REQUIRE(f.cache->lookup(0x40000000 + 8 * KiB, 8 * KiB, reg).ok());
        REQUIRE(reg.base == 0x40000000 + 8 * KiB);
        REQUIRE(reg.length == 8 * KiB);
        REQUIRE(f.cache->stats().pin_failures == 1);
    }
}

TEST_CASE("overlapping requests share one pin, and a wider one replaces what it overlaps",
          "[cache]")
{
    Fixture f([](CacheOptions &o) { o.allocation_of = nullptr; });
    f.memory.allocate(0x50000000, 16 * MiB);
    Registration a, b, c;
    REQUIRE(f.cache->lookup(0x50000000, 10, a).ok());          // [0, 64K)
    REQUIRE(f.cache->lookup(0x50000000 + 1000, 2000, b).ok()); // inside: hit
    REQUIRE(b.id == a.id);
    REQUIRE(f.backend->pins == 1);
    REQUIRE(f.cache->lookup(0x50000000 + 32 * KiB, 100 * KiB, c).ok()); // straddles
    REQUIRE(c.base == 0x50000000);
    REQUIRE(c.length == 192 * KiB);
    REQUIRE(f.cache->size() == 1);
    REQUIRE(f.cache->stats().merges == 1);
    REQUIRE(f.drain() == 1); // the narrower pin is released
    REQUIRE(f.backend->live_count() == 1);
    Registration again;
    REQUIRE(f.cache->lookup(0x50000000 + 10, 10, again).ok());
    REQUIRE(again.id == c.id);
}

TEST_CASE("concurrent misses of one range make one pin", "[cache][threads]")
{
    Fixture f;
    f.memory.allocate(0x60000000, 2 * MiB);
    f.backend->pin_delay_us = 20000; // the others arrive while it runs
    constexpr int threads = 8;
    std::vector<std::thread> pool;
    std::vector<uint64_t> ids(threads);
    std::atomic<int> ready{0};
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            ready++;
            while (ready < threads) {
            }
            Registration reg;
            // Catch's assertions are not thread-safe: check on the main thread.
            ids[t] = f.cache->lookup(0x60000000 + t * 4096, 4096, reg).ok() ? reg.id : 0;
        });
    }
    for (auto &t : pool)
        t.join();
    REQUIRE(f.backend->pins == 1);
    REQUIRE(ids[0] != 0);
    for (uint64_t id : ids)
        REQUIRE(id == ids[0]);
}

TEST_CASE("after invalidate returns lookups miss, and the worker unpins with its delay", "[cache]")
{
    Fixture f;
    f.memory.allocate(0x70000000, MiB);
    Registration reg;
    REQUIRE(f.cache->lookup(0x70000000, 4096, reg).ok());
    REQUIRE(f.cache->invalidate(0x70000000 + 4096, 1) == 1);
    REQUIRE(f.backend->is_live(reg.handle)); // unpinning is the worker's
    REQUIRE(f.cache->has_retired());

    // VA reuse: the same address, a new allocation.
    f.memory.free(0x70000000);
    uint64_t new_id = f.memory.allocate(0x70000000, MiB);
    Registration fresh;
    REQUIRE(f.cache->lookup(0x70000000, 4096, fresh).ok());
    REQUIRE(fresh.id != reg.id);
    REQUIRE(fresh.buffer_id == new_id);

    std::vector<UnpinRecord> unpinned;
    REQUIRE(f.cache->drain_unpins([&](const UnpinRecord &r) { unpinned.push_back(r); }) == 1);
    REQUIRE(unpinned.size() == 1);
    REQUIRE(unpinned[0].handle == reg.handle);
    REQUIRE(unpinned[0].addr == 0x70000000);
    REQUIRE(unpinned[0].length == MiB);
    REQUIRE(unpinned[0].reason == UnpinReason::invalidated);
    REQUIRE(unpinned[0].lat_ns > 0);
    REQUIRE_FALSE(f.backend->is_live(reg.handle));
    REQUIRE_FALSE(f.cache->has_retired());
    REQUIRE(f.backend->bad_unpins == 0);
}

TEST_CASE("an unpin a free made on its own thread keeps the worker told until it is logged",
          "[cache]")
{
    // The worker runs its batch, and logs unpins, only while has_retired()
    // says so; an unpin done on the free's thread waits in the cache for
    // that batch. Were it forgotten there, a free that is the program's
    // last event would leave its unpin out of the log.
    Fixture f;
    f.memory.allocate(0x78000000, MiB);
    Registration reg;
    REQUIRE(f.cache->lookup(0x78000000, 4096, reg).ok());
    REQUIRE(f.cache->invalidate(0x78000000, MiB) == 1);
    f.cache->unpin_retired();                      // as free_invalidation.cpp's unpin_freed does
    REQUIRE_FALSE(f.backend->is_live(reg.handle)); // unpinned on this thread
    REQUIRE(f.cache->has_retired());               // and not yet reported
    std::vector<UnpinRecord> unpinned;
    REQUIRE(f.cache->drain_unpins([&](const UnpinRecord &r) { unpinned.push_back(r); }) == 1);
    REQUIRE(unpinned.size() == 1);
    REQUIRE(unpinned[0].handle == reg.handle);
    REQUIRE_FALSE(f.cache->has_retired());
}

TEST_CASE("invalidating memory that holds no registration removes nothing", "[cache]")
{
    Fixture f;
    f.memory.allocate(0x80000000, MiB);
    f.memory.allocate(0x80000000 + MiB, MiB);
    Registration reg;
    REQUIRE(f.cache->lookup(0x80000000, 10, reg).ok());
    REQUIRE(f.cache->invalidate(0x80000000 + MiB, MiB) == 0); // the neighbour
    REQUIRE(f.cache->invalidate(0x90000000, 0) == 0);
    Registration again;
    REQUIRE(f.cache->lookup(0x80000000, 10, again).ok());
    REQUIRE(again.id == reg.id);
    REQUIRE(f.backend->pins == 1);
}

TEST_CASE("a registration held by get stays pinned through a free until put", "[cache]")
{
    Fixture f;
    f.memory.allocate(0x90000000, MiB);
    HeldRegistration held;
    REQUIRE(f.cache->get(0x90000000, 100, held).ok());
    REQUIRE(f.cache->invalidate(0x90000000, MiB) == 1);
    REQUIRE(f.drain() == 0);
    REQUIRE(f.backend->is_live(held.reg.handle));
    REQUIRE(f.cache->stats().unpins_deferred >= 1);
    const uint64_t handle = held.reg.handle; // put() empties `held`
    f.cache->put(held);
    REQUIRE(f.drain() == 1);
    REQUIRE_FALSE(f.backend->is_live(handle));
}

TEST_CASE("holds beyond the per-thread slots are counted and still protect the pin", "[cache]")
{
    Fixture f;
    std::vector<HeldRegistration> holds(3 * hold_slot_count);
    for (size_t i = 0; i < holds.size(); ++i) {
        uint64_t base = 0xA0000000 + i * MiB;
        f.memory.allocate(base, MiB);
        REQUIRE(f.cache->get(base, 10, holds[i]).ok());
    }
    size_t counted = 0;
    for (auto &h : holds)
        counted += h.entry != nullptr;
    REQUIRE(counted == holds.size() - hold_slot_count);
    // Hit-path holds too: the same ranges again.
    HeldRegistration extra;
    REQUIRE(f.cache->get(0xA0000000, 10, extra).ok());
    REQUIRE(extra.entry != nullptr);

    for (size_t i = 0; i < holds.size(); ++i)
        f.cache->invalidate(0xA0000000 + i * MiB, MiB);
    REQUIRE(f.drain() == 0);
    REQUIRE(f.backend->live_count() == holds.size());
    for (auto &h : holds)
        f.cache->put(h);
    REQUIRE(f.drain() == holds.size() - 1); // the first is still held by `extra`
    f.cache->put(extra);
    REQUIRE(f.drain() == 1);
    REQUIRE(f.backend->live_count() == 0);
}

TEST_CASE("put on another thread releases the hold and wakes the worker", "[cache][threads]")
{
    std::atomic<int> wakeups{0};
    Fixture f([&](CacheOptions &o) { o.wakeup = [&] { wakeups++; }; });
    f.memory.allocate(0xB0000000, MiB);
    HeldRegistration held;
    REQUIRE(f.cache->get(0xB0000000, 10, held).ok());
    f.cache->invalidate(0xB0000000, MiB);
    REQUIRE(f.drain() == 0); // held: deferred, and the cache now waits for the put
    std::thread([&] { f.cache->put(held); }).join();
    REQUIRE(wakeups >= 1);
    REQUIRE(f.drain() == 1);
}

TEST_CASE("the entry budget evicts the least recently used entry, sparing recent hits", "[cache]")
{
    Fixture f([](CacheOptions &o) { o.max_entries = 4; });
    for (int i = 0; i < 5; ++i)
        f.memory.allocate(0xC0000000 + i * MiB, MiB);
    Registration reg;
    for (int i = 0; i < 4; ++i)
        REQUIRE(f.cache->lookup(0xC0000000 + i * MiB, 10, reg).ok());
    // Entry 0 is the oldest but is used again (from a thread whose hit
    // cache is cold, so the hit reaches the entry); entry 1 is not.
    bool hit = false;
    std::thread([&] {
        Registration r;
        hit = f.cache->lookup(0xC0000000, 10, r).ok();
    }).join();
    REQUIRE(hit);
    REQUIRE(f.cache->lookup(0xC0000000 + 4 * MiB, 10, reg).ok());
    REQUIRE(f.cache->size() == 4);
    REQUIRE(f.cache->stats().evictions == 1);
    std::vector<UnpinRecord> gone;
    f.cache->drain_unpins([&](const UnpinRecord &r) { gone.push_back(r); });
    REQUIRE(gone.size() == 1);
    REQUIRE(gone[0].reason == UnpinReason::evicted);
    // Entry 0 had its second chance; the oldest untouched one left.
    REQUIRE(gone[0].addr == 0xC0000000 + MiB);
}

TEST_CASE("the byte budget keeps the pinned bytes under the limit", "[cache]")
{
    Fixture f([](CacheOptions &o) {
        o.max_bytes = 4 * MiB;
        o.max_entries = 0;
    });
    Registration reg;
    for (int i = 0; i < 10; ++i) {
        f.memory.allocate(0xD0000000 + i * 2 * MiB, 2 * MiB);
        REQUIRE(f.cache->lookup(0xD0000000 + i * 2 * MiB, 10, reg).ok());
        REQUIRE(f.cache->size() <= 2);
    }
    f.drain();
    REQUIRE(f.backend->live_count() == 2);
    REQUIRE(f.cache->stats().bytes_pinned == 4 * MiB);
    REQUIRE(f.cache->stats().peak_bytes_pinned >= 4 * MiB);
}

TEST_CASE("a pin refused for lack of BAR space evicts and retries", "[cache]")
{
    Fixture f([](CacheOptions &o) { o.max_entries = 0; });
    f.backend->capacity = 3 * MiB;
    Registration reg;
    for (int i = 0; i < 3; ++i) {
        f.memory.allocate(0xE0000000 + i * MiB, MiB);
        REQUIRE(f.cache->lookup(0xE0000000 + i * MiB, 10, reg).ok());
    }
    f.memory.allocate(0xE0000000 + 3 * MiB, MiB);
    REQUIRE(f.cache->lookup(0xE0000000 + 3 * MiB, 10, reg).ok());
    CacheStats s = f.cache->stats();
    REQUIRE(s.no_space_retries >= 1);
    REQUIRE(s.evictions >= 1);
    REQUIRE(f.backend->live_count() <= 3);

    SECTION("but not when everything is held")
    {
        Fixture g([](CacheOptions &o) { o.max_entries = 0; });
        g.backend->capacity = MiB;
        g.memory.allocate(0xF0000000, MiB);
        g.memory.allocate(0xF0000000 + MiB, MiB);
        HeldRegistration held;
        REQUIRE(g.cache->get(0xF0000000, 10, held).ok());
        Registration other;
        Status status = g.cache->lookup(0xF0000000 + MiB, 10, other);
        REQUIRE(status.code == StatusCode::no_space);
        g.cache->put(held);
    }
}

TEST_CASE("managed memory is never pinned", "[cache]")
{
    Fixture f;
    f.memory.allocate(0x100000000, MiB, /*managed=*/true);
    Registration reg;
    REQUIRE(f.cache->lookup(0x100000000, 10, reg).code == StatusCode::managed);
    REQUIRE(f.backend->pins == 0);
    REQUIRE(f.cache->stats().managed_refused == 1);
}

TEST_CASE("verify mode catches a hit whose buffer changed and pins the new one", "[cache]")
{
    std::vector<std::pair<uint64_t, uint64_t>> mismatches;
    Fixture f([&](CacheOptions &o) {
        o.verify = true;
        o.on_mismatch = [&](uint64_t, uint64_t expected, uint64_t actual) {
            mismatches.emplace_back(expected, actual);
        };
    });
    uint64_t old_id = f.memory.allocate(0x110000000, MiB);
    Registration reg;
    REQUIRE(f.cache->lookup(0x110000000, 10, reg).ok());
    REQUIRE(f.cache->lookup(0x110000000, 10, reg).ok());
    REQUIRE(f.cache->stats().verify_mismatches == 0);
    // A free the cache never heard of.
    f.memory.free(0x110000000);
    uint64_t new_id = f.memory.allocate(0x110000000, MiB);
    REQUIRE(f.cache->lookup(0x110000000, 10, reg).ok());
    REQUIRE(reg.buffer_id == new_id);
    CacheStats s = f.cache->stats();
    REQUIRE(s.verify_mismatches == 1);
    REQUIRE(s.verify_checks == 2); // the two hits; the misses pin
    REQUIRE(mismatches == std::vector<std::pair<uint64_t, uint64_t>>{{old_id, new_id}});
}

TEST_CASE("a pin that raced a free of its range is never published", "[cache]")
{
    Fixture f;
    f.memory.allocate(0x120000000, MiB);
    int raced = 0;
    f.backend->during_pin = [&](uint64_t, uint64_t) {
        if (raced++ == 0) {
            // The application frees (and the hook invalidates) while the
            // pin runs; the memory comes back before the pin checks it.
            f.cache->invalidate(0x120000000, MiB);
        }
    };
    Registration reg;
    REQUIRE(f.cache->lookup(0x120000000, 10, reg).ok());
    CacheStats s = f.cache->stats();
    REQUIRE(s.stale_pins == 1);
    REQUIRE(s.pins == 2);
    REQUIRE(f.drain() == 1);
    REQUIRE(f.backend->live_count() == 1);
    REQUIRE(f.backend->is_live(reg.handle));
}

TEST_CASE("an invalidation after the real free concerns the pin that started at its clock reading",
          "[cache]")
{
    // The hook's second invalidation reads the pin clock once the real free
    // has returned; a pin that began at exactly that reading may have
    // exported the memory before it was freed, so it is not published.
    Fixture f;
    f.memory.allocate(0x128000000, MiB);
    int raced = 0;
    f.backend->during_pin = [&](uint64_t, uint64_t) {
        if (raced++ == 0)
            f.cache->invalidate(0x128000000, MiB, f.cache->pin_clock());
    };
    Registration reg;
    REQUIRE(f.cache->lookup(0x128000000, 10, reg).ok());
    CacheStats s = f.cache->stats();
    CHECK(s.stale_pins == 1);
    CHECK(s.pins == 2);
    f.drain();
    CHECK(f.backend->live_count() == 1);
    CHECK(f.backend->is_live(reg.handle));
}

TEST_CASE("a pin that outlives the invalidation log is pinned again", "[cache]")
{
    // More frees land while one pin runs than the log of invalidations
    // holds, the first of them over the pin's range: the record is gone,
    // so the pin cannot be shown clean and must not be published.
    Fixture f;
    f.memory.allocate(0x129000000, MiB);
    int calls = 0;
    f.backend->during_pin = [&](uint64_t, uint64_t) {
        if (calls++ != 0)
            return;
        f.cache->invalidate(0x129000000, MiB);
        for (uint64_t i = 0; i < 5000; ++i) // more than the log's 4096
            f.cache->invalidate(0x400000000 + i * MiB, MiB);
    };
    Registration reg;
    REQUIRE(f.cache->lookup(0x129000000, 10, reg).ok());
    CacheStats s = f.cache->stats();
    CHECK(s.stale_pins == 1);
    CHECK(s.pins == 2);
}

TEST_CASE("a revoked pin leaves the cache: its unpin says so and the next lookup pins again",
          "[cache]")
{
    Fixture f;
    f.memory.allocate(0x12A000000, MiB);
    f.memory.allocate(0x12B000000, MiB);
    Registration first, other;
    REQUIRE(f.cache->lookup(0x12A000000, 10, first).ok());
    REQUIRE(f.cache->lookup(0x12B000000, 10, other).ok());
    std::vector<Registration> revoked = f.cache->revoke({first.handle});
    REQUIRE(revoked.size() == 1);
    CHECK(revoked[0].handle == first.handle);
    CHECK(f.cache->size() == 1);
    CHECK(f.cache->stats().revoked == 1);
    std::vector<UnpinRecord> gone;
    f.cache->drain_unpins([&](const UnpinRecord &r) { gone.push_back(r); });
    REQUIRE(gone.size() == 1);
    CHECK(gone[0].reason == UnpinReason::revoked);
    CHECK(gone[0].addr == 0x12A000000);
    Registration again;
    REQUIRE(f.cache->lookup(0x12A000000, 10, again).ok());
    CHECK(again.handle != first.handle); // pinned anew
    CHECK(f.cache->stats().pins == 3);
    CHECK(f.cache->revoke({0x999999}).empty()); // a handle it never held
}

TEST_CASE("frees of other ranges while a pin runs do not make it pin again", "[cache]")
{
    // Pin-on-alloc under many threads: a thousand unrelated frees land
    // while one pin is in the backend.
    Fixture f;
    f.memory.allocate(0x120000000, MiB);
    int calls = 0;
    f.backend->during_pin = [&](uint64_t, uint64_t) {
        if (calls++ == 0)
            for (uint64_t i = 0; i < 1000; ++i)
                f.cache->invalidate(0x300000000 + i * MiB, MiB);
    };
    Registration reg;
    REQUIRE(f.cache->lookup(0x120000000, 10, reg).ok());
    CacheStats s = f.cache->stats();
    CHECK(s.stale_pins == 0);
    CHECK(s.pins == 1);
}

TEST_CASE("one drain unpins its whole batch in one backend call", "[cache]")
{
    Fixture f;
    Registration reg;
    for (int i = 0; i < 50; ++i) {
        f.memory.allocate(0x130000000 + i * MiB, MiB);
        REQUIRE(f.cache->lookup(0x130000000 + i * MiB, 10, reg).ok());
    }
    f.cache->invalidate(0x130000000, 50 * MiB);
    REQUIRE(f.cache->size() == 0);
    uint64_t calls = f.backend->unpin_calls;
    REQUIRE(f.drain() == 50);
    REQUIRE(f.backend->unpin_calls == calls + 1);
}

TEST_CASE("destroying the cache unpins everything, held or retired", "[cache]")
{
    FakeMemory memory;
    auto state = std::make_shared<FakeBackendState>();
    {
        RegistrationCache cache(std::make_unique<FakeBackend>(state, &memory), memory.options());
        Registration reg;
        HeldRegistration held;
        for (int i = 0; i < 5; ++i) {
            memory.allocate(0x140000000 + i * MiB, MiB);
            REQUIRE(cache.lookup(0x140000000 + i * MiB, 10, reg).ok());
        }
        REQUIRE(cache.get(0x140000000, 10, held).ok());
        cache.invalidate(0x140000000, 2 * MiB);
        REQUIRE(state->live_count() == 5);
    }
    REQUIRE(state->live_count() == 0);
    REQUIRE(state->bad_unpins == 0);
}

TEST_CASE("pins never hold more descriptors than their budget", "[cache]")
{
    // Counted where the pins are made (the fake backend's most alive at
    // once), one thread at a time or with a pin held in flight by a gate:
    // nothing here depends on how fast anything runs.
    constexpr uint64_t budget = 4;
    Fixture f([](CacheOptions &o) { o.max_descriptors = budget; });
    constexpr uint64_t base = 0x600000000;
    for (uint64_t i = 0; i < 16; ++i)
        f.memory.allocate(base + i * 4 * MiB, 2 * MiB);
    auto at = [](uint64_t i) { return base + i * 4 * MiB; };

    SECTION("nothing held: every lookup pins, the least recently used going first")
    {
        for (uint64_t i = 0; i < 16; ++i) {
            Registration reg;
            REQUIRE(f.cache->lookup(at(i), 4096, reg).ok());
            CHECK(f.backend->live_count() <= budget);
        }
        CHECK(f.backend->pins == 16);
        CHECK(f.backend->most_live == budget);
    }
    SECTION("every descriptor held: the next pin is refused, not made")
    {
        std::vector<HeldRegistration> held(budget);
        for (uint64_t i = 0; i < budget; ++i)
            REQUIRE(f.cache->get(at(i), 4096, held[i]).ok());
        Registration reg;
        CHECK(f.cache->lookup(at(budget), 4096, reg).code == StatusCode::no_descriptors);
        CHECK(f.backend->most_live == budget);
        // Retired while held, they still hold their descriptors.
        f.cache->invalidate(at(0), 2 * MiB);
        CHECK(f.cache->lookup(at(budget), 4096, reg).code == StatusCode::no_descriptors);
        CHECK(f.backend->most_live == budget);
        f.cache->put(held[0]);
        CHECK(f.cache->lookup(at(budget), 4096, reg).ok());
        CHECK(f.backend->most_live == budget);
        for (uint64_t i = 1; i < budget; ++i)
            f.cache->put(held[i]);
    }
    SECTION("a pin in flight on another thread counts")
    {
        std::vector<HeldRegistration> held(budget - 1);
        for (uint64_t i = 0; i < budget - 1; ++i)
            REQUIRE(f.cache->get(at(i), 4096, held[i]).ok());
        // The next pin stops inside the backend until the other thread's
        // lookup has been answered.
        std::mutex m;
        std::condition_variable cv;
        bool in_flight = false, answered = false;
        f.backend->during_pin = [&](uint64_t, uint64_t) {
            std::unique_lock<std::mutex> lock(m);
            if (in_flight)
                return; // the other thread's own pin, if it makes one
            in_flight = true;
            cv.notify_all();
            cv.wait(lock, [&] { return answered; });
        };
        std::thread first([&] {
            Registration reg;
            CHECK(f.cache->lookup(at(budget), 4096, reg).ok());
        });
        {
            std::unique_lock<std::mutex> lock(m);
            cv.wait(lock, [&] { return in_flight; });
        }
        Registration reg;
        CHECK(f.cache->lookup(at(budget + 1), 4096, reg).code == StatusCode::no_descriptors);
        {
            std::lock_guard<std::mutex> lock(m);
            answered = true;
        }
        cv.notify_all();
        first.join();
        f.backend->during_pin = nullptr;
        CHECK(f.backend->most_live == budget);
        for (HeldRegistration &h : held)
            f.cache->put(h);
    }
}

TEST_CASE("an unpin is stamped when its release began, not when the backend finished", "[cache]")
{
    // The backend's slow mode: each unpin takes 20 ms between the times it
    // notes as it begins and as it ends.
    Fixture f;
    f.backend->unpin_delay_us = 20000;
    f.memory.allocate(0x610000000, 2 * MiB);
    Registration reg;
    REQUIRE(f.cache->lookup(0x610000000, 4096, reg).ok());
    f.cache->invalidate(0x610000000, 2 * MiB);
    std::vector<UnpinRecord> records;
    REQUIRE(f.cache->drain_unpins([&](const UnpinRecord &r) { records.push_back(r); }) == 1);
    REQUIRE(records.size() == 1);
    const uint64_t began = f.backend->last_unpin_began, ended = f.backend->last_unpin_ended;
    REQUIRE(ended - began >= 20'000'000); // the clock's ns here (no TSC started)
    CHECK(records[0].started != 0);
    CHECK(records[0].started <= began);
}

TEST_CASE("a pin made on the shim's own initiative is set up for a peer once, at the first get",
          "[cache]")
{
    Fixture f;
    const uint64_t base = 0x50000000;
    f.memory.allocate(base, 4 * MiB);
    f.memory.allocate(base + 8 * MiB, 4 * MiB);
    Registration reg;
    pinning_on_own_initiative = true;
    REQUIRE(f.cache->lookup(base, 4 * MiB, reg).ok());
    pinning_on_own_initiative = false;
    REQUIRE(reg.peer_setup_deferred);
    REQUIRE(f.backend->peer_setups == 0);
    // Each get on a thread of its own: an empty hit cache, so the deferral
    // travels through the page hash (and the index, on the first miss).
    auto get_on_new_thread = [&](uint64_t addr, bool &deferred, bool &ok) {
        std::thread([&] {
            HeldRegistration held;
            ok = f.cache->get(addr, 4096, held).ok();
            deferred = held.reg.peer_setup_deferred;
            ok = ok && f.cache->prepare_for_peer(held).ok();
            f.cache->put(held);
        }).join();
    };
    for (int i = 0; i < 3; ++i) {
        bool deferred = false, ok = false;
        get_on_new_thread(base + i * MiB, deferred, ok);
        CHECK(ok);
        CHECK(deferred);
    }
    CHECK(f.backend->peer_setups == 1);
    // A pin a library's miss made was set up by the backend's pin itself.
    bool deferred = true, ok = false;
    get_on_new_thread(base + 8 * MiB, deferred, ok);
    CHECK(ok);
    CHECK_FALSE(deferred);
    CHECK(f.backend->peer_setups == 1);
}
