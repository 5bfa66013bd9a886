// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/prim/asymmetric_fence.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gdrhook {

AsymmetricFence registration_fence;

namespace {

long membarrier(int command)
{
    return syscall(SYS_membarrier, command, 0, 0);
}

// Whether this process may use membarrier(PRIVATE_EXPEDITED); asked once.
// Never under ThreadSanitizer, which does not model it.
bool process_registered()
{
#if defined(GDRHOOK_TSAN)
    return false;
#else
    static const bool registered = [] {
        long supported = membarrier(MEMBARRIER_CMD_QUERY);
        if (supported < 0 || !(supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
            return false; // kernels before 4.14, seccomp
        return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
    }();
    return registered;
#endif
}

} // namespace

void AsymmetricFence::enable()
{
    if (process_registered())
        ready_.store(true, std::memory_order_seq_cst);
}

void AsymmetricFence::heavy() const
{
    heavy_calls_.fetch_add(1, std::memory_order_relaxed);
    // The flag is read after our own stores: the caller has already
    // published what the light side must see.
    if (ready_.load(std::memory_order_seq_cst) && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return;
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

} // namespace gdrhook
