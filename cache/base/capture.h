// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Stream captures in progress in the process (docs/design.md). While a
// capture runs, a "potentially unsafe" driver call (cuMemAlloc, cuMemFree,
// cuCtxSynchronize, cuPointerSetAttribute(SYNC_MEMOPS)) from any thread
// fails and invalidates the application's capture in global mode, so
// neither the recording thread nor the worker may make one: nothing is
// pinned until every capture has ended. The count covers every mode (a
// thread-local or relaxed capture is counted too: over-cautious, never
// unsafe). The hook counts a capture before the real begin, so no other
// thread's pin can slip in between, and uncounts it when the real call
// failed or the real end returned (ended, valid or invalidated).
#pragma once

#include "cache/prim/hot_line.h"

namespace gdrhook {

// Begins and ends the driver-level wrappers counted on this thread: the
// runtime's wrappers count a capture themselves only when the runtime
// reached the driver some way we do not see (none counted during the call).
inline GDRHOOK_THREAD_LOCAL uint32_t captures_counted_on_thread = 0;

inline void capture_beginning()
{
    ++captures_counted_on_thread;
    hot_line.captures.fetch_add(1, std::memory_order_acq_rel);
}

inline void capture_over()
{
    ++captures_counted_on_thread;
    uint16_t now = hot_line.captures.load(std::memory_order_relaxed);
    while (now && !hot_line.captures.compare_exchange_weak(now, uint16_t(now - 1),
                                                           std::memory_order_acq_rel)) {
    }
}

inline bool capture_in_progress()
{
    return GDRHOOK_UNLIKELY(hot_line.captures.load(std::memory_order_acquire) != 0);
}

} // namespace gdrhook
