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

private:
    std::atomic<bool> ready_{false};
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

} // namespace gdrhook
