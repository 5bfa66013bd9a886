// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The registration cache's mutex (cache/prim/spin_then_sleep_mutex.h):
// one holder at a time whether waiters spin or sleep, and every sleeper
// woken by the unlocks that follow. Built with ThreadSanitizer where the
// compiler has it (tests/unit/meson.build): a second holder shows as a
// race on the guarded counter, not only as a lost increment.
#include "cache/prim/spin_then_sleep_mutex.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

using gdrhook::SpinThenSleepMutex;
using namespace std::chrono_literals;

namespace {

// Busy for about `looks` reads of a shared word: a holder that runs on,
// and a thread between two sections, without a system call that would
// let the others sleep.
void busy(int looks)
{
    static std::atomic<int> word{0};
    for (int i = 0; i < looks; ++i)
        (void)word.load(std::memory_order_relaxed);
}

struct Contention {
    long counter = 0;     // plain: a second holder loses increments
    bool overlap = false; // a holder found another one inside
    bool finished = true; // every thread ended within 20 s
};

// Each thread adds to a plain counter under the mutex `rounds` times.
// With `hold` 0 it stays busy a moment inside and outside the section, so
// the waiters spin and meet the holder's next lock at the unlock; holds
// past the spin budget put them to sleep instead.
Contention count_under_contention(int threads, int rounds, std::chrono::microseconds hold)
{
    SpinThenSleepMutex mutex;
    std::atomic<int> inside{0};
    Contention result;
    std::atomic<bool> overlap{false};
    auto work = [&](int seed) {
        for (int i = 0; i < rounds; ++i) {
            {
                std::lock_guard<SpinThenSleepMutex> lock(mutex);
                if (inside.fetch_add(1, std::memory_order_relaxed) != 0)
                    overlap.store(true, std::memory_order_relaxed);
                const long seen = result.counter;
                if (hold.count())
                    std::this_thread::sleep_for(hold);
                else
                    busy(20);
                result.counter = seen + 1;
                inside.fetch_sub(1, std::memory_order_relaxed);
            }
            if (!hold.count())
                busy((i * 7 + seed * 13) % 40);
        }
    };
    std::vector<std::future<void>> done;
    for (int t = 0; t < threads; ++t)
        done.push_back(std::async(std::launch::async, work, t));
    for (auto &d : done)
        if (d.wait_for(10s) != std::future_status::ready) {
            // A sleeper never woken: say so, and leave the threads behind
            // (a future of std::async would wait for its thread).
            for (auto &left : done)
                new std::future<void>(std::move(left));
            result.finished = false;
            return result;
        }
    result.overlap = overlap.load();
    return result;
}

} // namespace

TEST_CASE("one holder at a time while the waiters spin")
{
    const Contention c = count_under_contention(4, 20000, 0us);
    REQUIRE(c.finished);
    CHECK_FALSE(c.overlap);
    CHECK(c.counter == 4 * 20000);
}

TEST_CASE("one holder at a time, and every sleeper woken, when holds outlast the spin")
{
    // 200 us holds: four times the spin budget, so the waiters sleep.
    static_assert(SpinThenSleepMutex::spin_budget_ns < 200 * 1000, "the holds must outlast it");
    const Contention c = count_under_contention(4, 50, 200us);
    REQUIRE(c.finished);
    CHECK_FALSE(c.overlap);
    CHECK(c.counter == 4 * 50);
}

TEST_CASE("a sleeper is woken by the unlock, not by a timeout")
{
    SpinThenSleepMutex mutex;
    mutex.lock();
    std::promise<void> locked;
    auto got = locked.get_future();
    std::thread waiter([&] {
        std::lock_guard<SpinThenSleepMutex> lock(mutex);
        locked.set_value();
    });
    // Long past the spin budget: the waiter sleeps on the futex.
    std::this_thread::sleep_for(20ms);
    CHECK(got.wait_for(0s) == std::future_status::timeout);
    mutex.unlock();
    CHECK(got.wait_for(10s) == std::future_status::ready);
    waiter.join();
}

TEST_CASE("try_lock takes only a free mutex")
{
    SpinThenSleepMutex mutex;
    REQUIRE(mutex.try_lock());
    CHECK_FALSE(mutex.try_lock());
    mutex.unlock();
    CHECK(mutex.try_lock());
    mutex.unlock();
}
