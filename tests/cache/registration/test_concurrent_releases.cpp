// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Releases of several threads at once (cache/registration/reclaimer.h): a
// thread's release does not wait for another thread's, a free releases
// what it retired itself and never waits for a neighbour's release, and a
// free still returns only once what it retired is released, whichever
// thread took it.
//
// The fake backend's unpin holds the first release open until the test
// lets it go (or, where a second release can never begin, until a few
// seconds have passed: then the first test fails, it does not hang).
#include "fakes.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

using namespace gdrhook;
using namespace gdrhook::testing;

namespace {

// Holds the first unpin of a handle in `held` until open() (or the
// deadline); says when it is being held and which handles were unpinned
// while it was.
struct ReleaseGate {
    std::mutex mu;
    std::condition_variable changed;
    uint64_t held = 0;
    bool holding = false, opened = false;
    std::vector<uint64_t> unpinned_meanwhile;

    bool on_unpin(uint64_t handle)
    {
        std::unique_lock<std::mutex> lock(mu);
        if (handle != held) {
            if (holding)
                unpinned_meanwhile.push_back(handle);
            changed.notify_all();
            return true;
        }
        holding = true;
        changed.notify_all();
        changed.wait_for(lock, std::chrono::seconds(5), [&] { return opened; });
        holding = false;
        return true;
    }
    void wait_until_holding()
    {
        std::unique_lock<std::mutex> lock(mu);
        changed.wait(lock, [&] { return holding; });
    }
    void open()
    {
        std::lock_guard<std::mutex> lock(mu);
        opened = true;
        changed.notify_all();
    }
};

// One step of a test's thread that another waits for.
struct Signal {
    std::mutex mu;
    std::condition_variable changed;
    bool given = false;

    void give()
    {
        std::lock_guard<std::mutex> lock(mu);
        given = true;
        changed.notify_all();
    }
    void wait()
    {
        std::unique_lock<std::mutex> lock(mu);
        changed.wait(lock, [&] { return given; });
    }
};

// Two pinned megabytes, at 0x40000000 (`first`, whose release the gate
// holds) and 0x50000000.
struct TwoPins {
    Fixture f;
    Registration first, second;
    ReleaseGate gate;

    TwoPins()
    {
        f.memory.allocate(0x40000000, MiB);
        f.memory.allocate(0x50000000, MiB);
        REQUIRE(f.cache->lookup(0x40000000, 4096, first).ok());
        REQUIRE(f.cache->lookup(0x50000000, 4096, second).ok());
        gate.held = first.handle;
        f.backend->unpin_allowed = [this](uint64_t handle) { return gate.on_unpin(handle); };
    }
};

} // namespace

TEST_CASE("a thread's release does not wait for another thread's release to end",
          "[cache][threads]")
{
    TwoPins pins;
    Fixture &f = pins.f;
    ReleaseGate &gate = pins.gate;
    const Registration &first = pins.first, &second = pins.second;

    std::atomic<size_t> removed_first{0};
    std::thread freeing_first([&] { // Catch's assertions stay on the test's thread
        removed_first = f.cache->invalidate(0x40000000, MiB);
        f.cache->unpin_retired();
    });
    gate.wait_until_holding();
    // The second free, while the first one's release is held open.
    REQUIRE(f.cache->invalidate(0x50000000, MiB) == 1);
    std::thread freeing_second([&] {
        f.cache->unpin_retired();
        gate.open();
    });
    freeing_second.join();
    freeing_first.join();
    CHECK(removed_first == 1);
    {
        std::lock_guard<std::mutex> lock(gate.mu);
        CHECK(gate.unpinned_meanwhile == std::vector<uint64_t>{second.handle});
    }
    CHECK_FALSE(f.backend->is_live(first.handle));
    CHECK_FALSE(f.backend->is_live(second.handle));
    CHECK(f.backend->bad_unpins == 0);
    CHECK(f.drain() == 2); // both unpins reported
}

TEST_CASE("a free whose entry another thread is releasing returns once it is released",
          "[cache][threads]")
{
    Fixture f;
    f.memory.allocate(0x60000000, MiB);
    Registration reg;
    REQUIRE(f.cache->lookup(0x60000000, 4096, reg).ok());
    ReleaseGate gate;
    gate.held = reg.handle;
    f.backend->unpin_allowed = [&](uint64_t handle) { return gate.on_unpin(handle); };

    // This thread's free retired the entry; another thread's reclaim (a
    // neighbour's free, the worker) took it and is releasing it.
    REQUIRE(f.cache->invalidate(0x60000000, MiB) == 1);
    std::thread other([&] { f.cache->unpin_retired(); });
    gate.wait_until_holding();
    std::atomic<bool> live_at_return{true};
    std::thread freeing([&] {
        f.cache->unpin_retired();
        live_at_return = f.backend->is_live(reg.handle);
    });
    // Give a free that would not wait the time to return first.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.open();
    freeing.join();
    other.join();
    CHECK_FALSE(live_at_return);
    CHECK(f.backend->bad_unpins == 0);
}

TEST_CASE("a free does not wait for a neighbour's release that is not of its entry",
          "[cache][threads]")
{
    TwoPins pins;
    Fixture &f = pins.f;
    ReleaseGate &gate = pins.gate;
    const Registration &first = pins.first, &second = pins.second;

    // Both frees retire their entry before the first one reclaims: a
    // reclaim that took every retired entry would hold the second one's
    // behind the first one's held release.
    Signal first_retired, second_retired, first_go, second_go;
    std::thread freeing_first([&] {
        f.cache->invalidate_to_unpin(0x40000000, MiB);
        first_retired.give();
        first_go.wait();
        f.cache->unpin_retired();
    });
    bool returned_while_held = false, live_at_return = true;
    std::thread freeing_second([&] {
        first_retired.wait();
        f.cache->invalidate_to_unpin(0x50000000, MiB);
        second_retired.give();
        second_go.wait();
        f.cache->unpin_retired();
        std::lock_guard<std::mutex> lock(gate.mu);
        returned_while_held = gate.holding;
        live_at_return = f.backend->is_live(second.handle);
    });
    second_retired.wait();
    first_go.give();
    gate.wait_until_holding();
    second_go.give();
    freeing_second.join();
    gate.open();
    freeing_first.join();
    CHECK(returned_while_held);
    CHECK_FALSE(live_at_return);
    CHECK_FALSE(f.backend->is_live(first.handle));
    CHECK(f.backend->bad_unpins == 0);
    CHECK(f.drain() == 2); // both unpins reported
}

TEST_CASE("an entry held at its own free's release is released once put back", "[cache][threads]")
{
    Fixture f;
    f.memory.allocate(0x40000000, MiB);
    HeldRegistration held;
    REQUIRE(f.cache->get(0x40000000, 4096, held).ok());
    REQUIRE(f.cache->invalidate_to_unpin(0x40000000, MiB) == 1);
    f.cache->unpin_retired();
    const uint64_t handle = held.reg.handle; // put() empties `held`
    CHECK(f.backend->is_live(handle));       // held: its free left it
    f.cache->put(held);
    // Anyone's reclaim releases it now, the worker's too.
    CHECK(f.drain() == 1);
    CHECK_FALSE(f.backend->is_live(handle));
    CHECK(f.backend->bad_unpins == 0);
}

TEST_CASE("at the process's end the last drain releases what a free claimed", "[cache][threads]")
{
    Fixture f;
    f.memory.allocate(0x40000000, MiB);
    Registration reg;
    REQUIRE(f.cache->lookup(0x40000000, 4096, reg).ok());
    // A thread's free retired its entry and has not released it yet when
    // the process ends: it may never run again.
    std::thread freeing([&] { f.cache->invalidate_to_unpin(0x40000000, MiB); });
    freeing.join();
    f.cache->retire_all();
    CHECK(f.drain() == 1);
    CHECK_FALSE(f.backend->is_live(reg.handle));
    CHECK(f.backend->bad_unpins == 0);
}
