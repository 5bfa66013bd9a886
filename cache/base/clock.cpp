// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/clock.h"
#include "cache/events/thread_state.h"

#include <atomic>
#include <sys/syscall.h>
#include <unistd.h>

namespace gdrhook {

int32_t ask_tid(HotThreadState &cached, uint32_t generation)
{
    cached.tid = static_cast<int32_t>(syscall(SYS_gettid));
    cached.tid_generation = generation;
    return cached.tid;
}

void forget_cached_thread_ids()
{
    hot_line.fork_generation.fetch_add(1, std::memory_order_relaxed);
}

} // namespace gdrhook
