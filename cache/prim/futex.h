// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The futex(2) calls of the shim, private to the process: the worker's
// sleep (cache/events/event_pipeline.cpp) and the registration cache's
// mutexes (spin_then_sleep_mutex.h). glibc wraps neither call.
#pragma once

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <ctime>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gdrhook {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex is one 32-bit word");

// Sleeps while `word` holds `expected`, until a wake or `timeout_ns` (0:
// none). Returns true when the wait ended because the timeout ran out;
// false for a wake, a signal, or a word that had changed already.
inline bool futex_wait(std::atomic<uint32_t> &word, uint32_t expected, uint64_t timeout_ns = 0)
{
    timespec timeout{static_cast<time_t>(timeout_ns / 1000000000),
                     static_cast<long>(timeout_ns % 1000000000)};
    return syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT_PRIVATE, expected,
                   timeout_ns ? &timeout : nullptr, nullptr, 0) != 0 &&
           errno == ETIMEDOUT;
}

// Wakes up to `count` threads asleep on `word`.
inline void futex_wake(std::atomic<uint32_t> &word, int count)
{
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAKE_PRIVATE, count, nullptr,
            nullptr, 0);
}

inline void futex_wake_all(std::atomic<uint32_t> &word)
{
    futex_wake(word, INT_MAX);
}

} // namespace gdrhook
