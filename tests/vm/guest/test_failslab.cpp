// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_failslab.cpp - every slab allocation on the paths of open, PIN (both
// backends, with and without a peer) and UNPIN fails in turn, through the
// kernel's fault injection (failslab with /proc/thread-self/fail-nth: the
// Nth allocation of this thread fails). Each failure must be answered with
// an error and leave nothing behind: no pin, no open file, no provider
// table, no misuse, and (checked by the host) no KASAN, lockdep or other
// report. Runs on kernels built with CONFIG_FAILSLAB (the suite's debug
// kernel); init.sh runs it where /proc/self/fail-nth exists.
#include "common.hpp"

#include <functional>
#include <thread>

namespace vmtest {
namespace {

void write_file(const std::string &path, const std::string &v)
{
    Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    CHECK(fd.ok());
    CHECK(::write(fd.get(), v.data(), v.size()) == static_cast<ssize_t>(v.size()));
}

// Arms the Nth allocation of this thread to fail; disarm() says whether it
// did fail (the count ran out).
class FailNth {
public:
    FailNth() : fd_(::open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC)) { CHECK(fd_.ok()); }
    void arm(int n) { put(std::to_string(n)); }
    bool disarm()
    {
        char buf[32] = {};
        CHECK(::pread(fd_.get(), buf, sizeof(buf) - 1, 0) > 0);
        const bool fired = std::strtol(buf, nullptr, 10) == 0;
        put("0");
        return fired;
    }

private:
    void put(const std::string &v)
    {
        CHECK(::pwrite(fd_.get(), v.data(), v.size(), 0) == static_cast<ssize_t>(v.size()));
    }
    Fd fd_;
};

// Injected: runs one syscall with the thread's Nth allocation failing.
struct Injected {
    FailNth &nth;
    int n;
    bool fired = false;
    template <typename Fn> int operator()(Fn fn)
    {
        nth.arm(n);
        const int e = fn();
        fired = nth.disarm();
        return e;
    }
};

// Runs op with the 1st, 2nd, ... allocation of its injected syscall
// failing, until it runs with none failing; op sets up and cleans up
// around the injected call itself, and returns the call's errno.
int each_allocation_fails(const char *what, const std::function<int(Injected &)> &op)
{
    FailNth nth;
    for (int n = 1; n < 1000; n++) {
        Injected inj{nth, n};
        const int e = op(inj);
        if (!inj.fired) {
            CHECK_OK(e);
            std::printf("failslab: %s: %d allocations, each failed in turn\n", what, n - 1);
            return n - 1;
        }
        // A failed allocation may be absorbed (a fallback, a retry) or
        // fail the call; either way nothing may be left behind.
        check_no_leaks_but_files(what);
    }
    fail(__FILE__, __LINE__, std::string(what) + ": never ran without a failure");
}

} // namespace

int test_failslab()
{
    write_file("/sys/kernel/debug/failslab/ignore-gfp-wait", "N");
    write_file("/sys/kernel/debug/failslab/verbose", "0");
    HostBuffer buf(4 * kGpuPage);
    const PciAddr peer = first_pci_device();

    each_allocation_fails("open", [](Injected &inj) {
        int fd = -1;
        const int e = inj([&] {
            fd = ::open(GDRHOOK_DEVICE_PATH, O_RDWR | O_CLOEXEC);
            return fd < 0 ? errno : 0;
        });
        if (fd >= 0)
            ::close(fd);
        return e;
    });
    {
        Gdrhook dev;
        CHECK(dev.ok());
        for (bool with_peer : {false, true})
            each_allocation_fails(
                with_peer ? "PIN nv-p2p with a peer" : "PIN nv-p2p", [&](Injected &inj) {
                    gdrhook_ioc_pin p = Gdrhook::nvp2p_req(buf.data(), 4 * kGpuPage);
                    if (with_peer) {
                        p.flags |= GDRHOOK_PIN_PEER;
                        p.peer_domain = peer.domain;
                        p.peer_bdf = peer.bdf;
                    }
                    const int e = inj([&] { return dev.pin(&p); });
                    if (!e)
                        CHECK_OK(dev.unpin(p.handle));
                    return e;
                });
        VgemBuffer vb(16 * 4096);
        CHECK(vb.ok());
        each_allocation_fails("PIN dma-buf", [&](Injected &inj) {
            uint64_t h = 0;
            const int e = inj([&] { return dev.pin_dmabuf(vb.fd(), 0, 16 * 4096, peer, &h); });
            if (!e)
                CHECK_OK(dev.unpin(h));
            return e;
        });
        each_allocation_fails("UNPIN_BATCH", [&](Injected &inj) {
            uint64_t handles[4];
            for (auto &h : handles)
                CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h));
            const int e = inj([&] { return dev.unpin_batch(handles, 4); });
            if (e) // nothing unpinned: the batch failed before it began
                for (auto h : handles)
                    CHECK_OK(dev.unpin(h));
            return e;
        });
    }
    check_no_leaks("failslab");
    return 0;
}

} // namespace vmtest
