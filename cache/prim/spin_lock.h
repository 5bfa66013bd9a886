// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A lock for critical sections of a few dozen instructions that every
// allocation and free of the application passes through (the allocation
// tracker's shards). std::mutex costs two locked instructions per section
// (lock and unlock); this one costs one: unlock is a plain release store.
// Under contention it spins briefly, then yields, so a holder that was
// preempted does not make the others burn a whole time slice.
#pragma once

#include "cache/prim/cpu_relax.h"
#include "cache/prim/hot_path.h"

#include <atomic>
#include <sched.h>

namespace gdrhook {

class SpinLock {
public:
    void lock()
    {
        if (GDRHOOK_LIKELY(!locked_.exchange(true, std::memory_order_acquire)))
            return;
        lock_contended();
    }

    void unlock() { locked_.store(false, std::memory_order_release); }

    // In a forked child: a thread that held it does not exist there.
    void reset() { locked_.store(false, std::memory_order_relaxed); }

private:
    // Out of line: the uncontended lock is one exchange, and its callers'
    // code stays short (hot_path.h).
    __attribute__((noinline, cold)) void lock_contended()
    {
        for (int spins = 0;; ++spins) {
            // Test before test-and-set: waiters read a shared line and do
            // not bounce it between cores until it looks free.
            if (!locked_.load(std::memory_order_relaxed) &&
                !locked_.exchange(true, std::memory_order_acquire))
                return;
            if (spins < 64)
                cpu_relax();
            else
                sched_yield();
        }
    }

    std::atomic<bool> locked_{false};
};

} // namespace gdrhook
