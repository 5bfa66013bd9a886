// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The mutex of every lock a free takes on the program's own thread while
// the program waits in cuMemFree: the registration cache's writer and
// reclaimer (on the way to a pinned free's unpin) and the pointer table's
// writer (twice a free, once the table is made).
//
// Why not std::mutex: it puts a thread to sleep at the first contention,
// and on a virtual machine the wake that follows the unlock (an
// interrupt to a halted vCPU, the exits and entries of the guest) costs
// tens of microseconds, more than the sections it guards (a few: a round
// takes the retired entries, scans the holds and moves the pins out; the
// releases themselves run outside). Measured on one H200 guest under 8
// threads of churn: a free's wait for the reclaimer's mutex p99 57 us
// against p50 0.1 (docs/performance.md). This one spins while the holder
// is likely still running, up to spin_budget_ns, and only then sleeps.
//
// The states and the hand-over are the classic futex mutex's (Drepper,
// "Futexes Are Tricky", mutex 3): 0 free, 1 held, 2 held and maybe slept
// on. Whoever goes to sleep leaves 2, so the unlock that sees 2 makes the
// one system call that wakes one sleeper, and the woken thread takes the
// lock as 2 again (it cannot know it was the last). A spinner takes only a
// free lock (0 to 1), which leaves a sleeper's claim to the next unlock
// intact.
//
// Not for the allocation tracker's sections of a few dozen instructions
// on every allocation: spin_lock.h, whose unlock is a plain store.
#pragma once

#include "cache/prim/hot_path.h"

#include <atomic>
#include <cstdint>

namespace gdrhook {

class SpinThenSleepMutex {
public:
    // Longer than the sections the mutex guards usually take, and about
    // what one wake costs on a virtual machine: past it the holder was
    // most likely preempted, and a sleep costs the core nothing.
    static constexpr uint64_t spin_budget_ns = 50 * 1000;

    SpinThenSleepMutex() = default;
    SpinThenSleepMutex(const SpinThenSleepMutex &) = delete;
    SpinThenSleepMutex &operator=(const SpinThenSleepMutex &) = delete;

    void lock()
    {
        uint32_t free = unlocked;
        if (GDRHOOK_LIKELY(state_.compare_exchange_strong(free, held, std::memory_order_acquire,
                                                          std::memory_order_relaxed)))
            return;
        lock_contended();
    }

    bool try_lock()
    {
        uint32_t free = unlocked;
        return state_.compare_exchange_strong(free, held, std::memory_order_acquire,
                                              std::memory_order_relaxed);
    }

    void unlock()
    {
        if (state_.exchange(unlocked, std::memory_order_release) == held_and_slept_on)
            wake_one();
    }

    // In a forked child: a thread that held it does not exist there.
    void reset() { state_.store(unlocked, std::memory_order_relaxed); }

private:
    static constexpr uint32_t unlocked = 0;
    static constexpr uint32_t held = 1;
    static constexpr uint32_t held_and_slept_on = 2;

    // Out of line: the uncontended lock is one compare-and-swap.
    void lock_contended();
    void wake_one();

    std::atomic<uint32_t> state_{unlocked};
};

} // namespace gdrhook
