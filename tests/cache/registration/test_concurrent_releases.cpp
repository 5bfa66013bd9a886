// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Releases of several threads at once (cache/registration/reclaimer.h): a
// thread's release does not wait for another thread's, and a free still
// returns only once what it retired is released, whichever thread took it.
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

} // namespace

TEST_CASE("a thread's release does not wait for another thread's release to end",
          "[cache][threads]")
{
    Fixture f;
    f.memory.allocate(0x40000000, MiB);
    f.memory.allocate(0x50000000, MiB);
    Registration first, second;
    REQUIRE(f.cache->lookup(0x40000000, 4096, first).ok());
    REQUIRE(f.cache->lookup(0x50000000, 4096, second).ok());
    ReleaseGate gate;
    gate.held = first.handle;
    f.backend->unpin_allowed = [&](uint64_t handle) { return gate.on_unpin(handle); };

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
