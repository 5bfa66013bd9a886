// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/thread_state.h"

#include <sys/syscall.h>
#include <unistd.h>

namespace gdrhook {

GDRHOOK_THREAD_LOCAL HotThreadState hot_thread_state_slot;

intptr_t find_hot_thread_state_offset()
{
    // Every thread computes the same value; the first store wins nothing.
    const intptr_t offset = reinterpret_cast<char *>(&hot_thread_state_slot) -
                            static_cast<char *>(__builtin_thread_pointer());
    hot_line.thread_state_offset.store(offset, std::memory_order_relaxed);
    return offset;
}

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
