// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A store-load fence split in two unequal halves. Readers (the lookup hit
// path) publish "I am reading" or "I hold entry X" and then read shared
// state; the reclaimer (the worker) publishes "X is retired" and then reads
// the readers' slots. Each side needs a full fence between its store and its
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

extern std::atomic<bool> membarrier_ready;

// Registers the process for membarrier(PRIVATE_EXPEDITED) once; call before
// relying on the cheap light fence (the cache's constructor does).
void enable_asymmetric_fence();

inline void light_fence()
{
#if defined(GDRHOOK_TSAN)
    std::atomic_thread_fence(std::memory_order_seq_cst);
#else
    if (membarrier_ready.load(std::memory_order_relaxed))
        std::atomic_signal_fence(std::memory_order_seq_cst);
    else
        std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

void heavy_fence();

} // namespace gdrhook
