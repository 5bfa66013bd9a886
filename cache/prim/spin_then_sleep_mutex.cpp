// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/prim/spin_then_sleep_mutex.h"

#include "cache/prim/cpu_relax.h"
#include "cache/prim/futex.h"

#include <ctime>

namespace gdrhook {
namespace {

// cache/base/clock.h's monotonic_ns(), which prim/ cannot include:
// base/ builds on prim/ (base/capture.h).
uint64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); // vDSO: no system call
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

// How many looks at the lock between two readings of the clock: a look
// with its pause is tens of nanoseconds, the clock about twenty.
constexpr unsigned looks_per_clock_reading = 16;

} // namespace

void SpinThenSleepMutex::lock_contended()
{
    const uint64_t give_up = now_ns() + spin_budget_ns;
    for (unsigned looks = 1;; ++looks) {
        // Test before test-and-set: spinners read the line and leave it
        // where it is until the lock looks free.
        uint32_t seen = state_.load(std::memory_order_relaxed);
        if (seen == unlocked && state_.compare_exchange_weak(seen, held, std::memory_order_acquire,
                                                             std::memory_order_relaxed))
            return;
        if (looks % looks_per_clock_reading == 0 && now_ns() >= give_up)
            break;
        cpu_relax();
    }
    // Sleep. Whoever holds it now will see 2 and wake one of us; the one
    // woken takes it as 2 again, since others may still sleep.
    uint32_t seen = state_.exchange(held_and_slept_on, std::memory_order_acquire);
    while (seen != unlocked) {
        futex_wait(state_, held_and_slept_on);
        seen = state_.exchange(held_and_slept_on, std::memory_order_acquire);
    }
}

void SpinThenSleepMutex::wake_one()
{
    futex_wake(state_, 1);
}

} // namespace gdrhook
