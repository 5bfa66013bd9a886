// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/clock.h"
#include "cache/thread_state.h"

#include <atomic>
#include <sys/syscall.h>
#include <unistd.h>

namespace gdrhook {
namespace {

GDRHOOK_HOT_DATA std::atomic<uint32_t> fork_generation{1};

} // namespace

int32_t current_tid()
{
    uint32_t generation = fork_generation.load(std::memory_order_relaxed);
    HotThreadState &cached = hot_thread_state();
    if (cached.tid_generation != generation) {
        cached.tid = static_cast<int32_t>(syscall(SYS_gettid));
        cached.tid_generation = generation;
    }
    return cached.tid;
}

void forget_cached_thread_ids()
{
    fork_generation.fetch_add(1, std::memory_order_relaxed);
}

} // namespace gdrhook
