// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/prim/asymmetric_fence.h"

#include <linux/membarrier.h>
#include <mutex>
#include <sys/syscall.h>
#include <unistd.h>

namespace gdrhook {

std::atomic<bool> membarrier_ready{false};

namespace {
std::once_flag registration;

long membarrier(int command)
{
    return syscall(SYS_membarrier, command, 0, 0);
}
} // namespace

void enable_asymmetric_fence()
{
#if !defined(GDRHOOK_TSAN)
    std::call_once(registration, [] {
        long supported = membarrier(MEMBARRIER_CMD_QUERY);
        if (supported < 0 || !(supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
            return;
        if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)
            return;
        membarrier_ready.store(true, std::memory_order_seq_cst);
    });
#endif
}

void heavy_fence()
{
    // The flag is read after our own stores: the reclaimer's caller has
    // already published what readers must see.
    if (membarrier_ready.load(std::memory_order_seq_cst) &&
        membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return;
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

} // namespace gdrhook
