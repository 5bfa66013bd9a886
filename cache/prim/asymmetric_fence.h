// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A store-load fence split in two unequal halves. Readers (the lookup hit
// path) publish "I am reading" or "I hold entry X" and then read shared
// state; the reclaimer (on the thread whose free retired X, or on the
// worker) publishes "X is retired" and then reads the readers' slots. Each side needs a full fence between its store and its
// load, but readers run millions of times a second and the reclaimer rarely.
//
// light_fence() on the readers is only a compiler barrier once
// heavy_fence() on the reclaimer can use membarrier(PRIVATE_EXPEDITED),
// which makes every running thread of the process execute a full barrier.
// Until membarrier is registered (or where the kernel lacks it, and always
// under ThreadSanitizer, which does not model membarrier) both halves are a
// real seq_cst fence. The flag only ever goes from false to true, and only
// after registration succeeded, so a reader that still sees false pays for a
// fence it did not need: never unsafe.
#pragma once

#include <atomic>
#include <cstdint>

#if defined(__SANITIZE_THREAD__)
#define GDRHOOK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GDRHOOK_TSAN 1
#endif
#endif

namespace gdrhook {

// One pair of halves. Its flag is one byte, so that a user can keep it on
// the cache line its light side reads anyway (the event pipeline keeps its
// own on the queue's producer line).
class AsymmetricFence {
public:
    // Registers the process for membarrier(PRIVATE_EXPEDITED) (once per
    // process) and, if that worked, arms this fence's cheap light half.
    void enable();

    void light() const
    {
#if defined(GDRHOOK_TSAN)
        std::atomic_thread_fence(std::memory_order_seq_cst);
#else
        if (ready_.load(std::memory_order_relaxed))
            std::atomic_signal_fence(std::memory_order_seq_cst);
        else
            std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
    }

    // The caller has already published what the light side must see.
    void heavy() const;
    // How many times heavy() ran: its callers' tests hold where it may run.
    uint64_t heavy_calls() const
    {
        return heavy_calls_.load(std::memory_order_relaxed);
    }

private:
    std::atomic<bool> ready_{false};
    mutable std::atomic<uint64_t> heavy_calls_{0};
};

// The registration cache's: readers on lookups, the reclaimer on unpins.
extern AsymmetricFence registration_fence;

inline void enable_asymmetric_fence()
{
    registration_fence.enable();
}
inline void light_fence()
{
    registration_fence.light();
}
inline void heavy_fence()
{
    registration_fence.heavy();
}

// The hold protocol's fence (cache/registration/thread_records.h), on both
// sides: a full fence, not the pair above. get() and put() each pay one
// locked instruction, and the reclaimer's side is one too, so a free that
// releases its pin makes no system call: membarrier(2) took 2.3 us with one
// other thread of the process running and 8.5 us with fifteen (p50, a
// 16-CPU virtual machine with an H200), and interrupts every one of them.
// The read sections keep the asymmetric pair: only the rounds that free
// memory need it, and those run on the worker (reclaimer.h). GCC 11 and
// later compile it on x86-64 to `lock or` on the stack, not MFENCE (the
// same instruction as Linux's smp_mb()). tests/cache/prim/
// test_hold_fence.cpp holds it to the store-load order.
inline void hold_fence()
{
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

} // namespace gdrhook
