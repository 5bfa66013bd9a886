// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/clock.h"

#include <atomic>
#include <sys/syscall.h>
#include <unistd.h>

namespace gdrhook {
namespace {

GDRHOOK_HOT_DATA std::atomic<uint32_t> fork_generation{1};

struct CachedTid {
    uint32_t generation = 0;
    int32_t tid = 0;
};
GDRHOOK_THREAD_LOCAL CachedTid cached_tid;

} // namespace

int32_t current_tid()
{
    uint32_t generation = fork_generation.load(std::memory_order_relaxed);
    if (cached_tid.generation != generation) {
        cached_tid.tid = static_cast<int32_t>(syscall(SYS_gettid));
        cached_tid.generation = generation;
    }
    return cached_tid.tid;
}

void forget_cached_thread_ids()
{
    fork_generation.fetch_add(1, std::memory_order_relaxed);
}

} // namespace gdrhook
