// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The fake driver's side of gdrhook.ko's VM test: when memory is freed,
// the real driver calls the nv-p2p free callbacks of every page table
// pinned over it. The fake asks the test provider (gdrhook_tp.ko, which
// pins the fake's "GPU memory", ordinary process pages) to do the same
// through its device node. Where that node is absent (every test outside
// the VM) this does nothing.
#include "fake_state.h"

#include "gdrhook_tp_ioctl.h"

#include <atomic>
#include <cerrno>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace fake {

namespace {

constexpr uintptr_t gpu_page = 64 * 1024;

// The provider's node, opened on first use: -2 not tried yet, -1 absent.
std::atomic<int> provider_fd{-2};

int provider()
{
    int fd = provider_fd.load(std::memory_order_acquire);
    if (fd != -2)
        return fd;
    int opened = ::open(GDRHOOK_TP_DEVICE_PATH, O_RDWR | O_CLOEXEC);
    int expected = -2;
    if (!provider_fd.compare_exchange_strong(expected, opened < 0 ? -1 : opened,
                                             std::memory_order_acq_rel)) {
        if (opened >= 0)
            ::close(opened); // another thread got there first
        return expected;
    }
    return opened < 0 ? -1 : opened;
}

} // namespace

void provider_free_range(uintptr_t addr, size_t size)
{
    if (!size)
        return;
    const int fd = provider();
    if (fd < 0)
        return;
    // The provider pins whole 64 KiB "GPU pages": every table that touches
    // the freed range goes.
    gdrhook_tp_fire fire{};
    fire.addr = addr & ~(gpu_page - 1);
    fire.length = ((addr + size + gpu_page - 1) & ~(gpu_page - 1)) - fire.addr;
    while (::ioctl(fd, GDRHOOK_TP_IOCTL_FIRE, &fire) != 0 && errno == EINTR) {
    }
}

} // namespace fake
