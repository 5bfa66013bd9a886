// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_kill.cpp - "What must be shown" 5: a process holding 1,000 pins (both
// backends) is killed with SIGKILL; everything is released, and the module
// could not be unloaded while the pins were held. The init script then
// unloads it (rmmod must succeed).
#include "common.hpp"

#include <csignal>
#include <sys/syscall.h>
#include <sys/wait.h>

namespace vmtest {

int test_kill()
{
    constexpr int kNv = 900, kDmabuf = 100;
    int ready[2];
    CHECK(::pipe(ready) == 0);
    const pid_t pid = ::fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        Gdrhook dev;
        HostBuffer buf(16 * kGpuPage);
        VgemBuffer vb(16 * 4096);
        const PciAddr peer = first_pci_device();
        if (!dev.ok() || !vb.ok())
            std::_Exit(1);
        uint64_t h;
        for (int i = 0; i < kNv; i++)
            if (dev.pin_nvp2p(buf.data() + (i % 16) * kGpuPage, kGpuPage, &h))
                std::_Exit(1);
        for (int i = 0; i < kDmabuf; i++)
            if (dev.pin_dmabuf(vb.fd(), (i % 16) * 4096, 4096, peer, &h))
                std::_Exit(1);
        char c = 'r';
        if (::write(ready[1], &c, 1) != 1)
            std::_Exit(1);
        for (;;)
            ::pause();
    }
    ::close(ready[1]);
    char c = 0;
    CHECK(::read(ready[0], &c, 1) == 1 && c == 'r');
    ::close(ready[0]);

    CHECK(gdr_counter("pins_live") == kNv + kDmabuf);
    CHECK(tp_counter("tables_live") == kNv);
    // Unload is refused while a file (and its pins) is open.
    CHECK(::syscall(SYS_delete_module, "gdrhook", O_NONBLOCK) != 0);
    CHECK(errno == EWOULDBLOCK || errno == EBUSY);

    Stopwatch sw;
    CHECK(::kill(pid, SIGKILL) == 0);
    int st = 0;
    CHECK(::waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    std::printf("kill: %d pins released by SIGKILL in %.3f s\n", kNv + kDmabuf, sw.seconds());
    check_no_leaks("after kill -9");
    return 0;
}

} // namespace vmtest
