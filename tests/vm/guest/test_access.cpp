// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_access.cpp - who may use an open /dev/gdrhook, and what it costs them.
//
// opener_only: a forked child (another address space) holding the fd may
// neither read the opener's revocation events nor see them with poll();
// the opener still reads every one.
// errnos: kernel-internal errnos from the driver (NVIDIA's -ENOTSUPP, 524)
// reach user space as errnos strerror() knows.
// access: the node is 0666, open to every user as RDMA's uverbs devices
// are: a user in no group pins host memory up to its locked-memory limit
// and is refused past it (ENOMEM); a caller's pins are counted against a per-user
// cap on pages actually pinned, across all of its open files; the memory an
// open file takes is charged to the opener's memory cgroup; a caller without
// CAP_SYS_RAWIO may only name a network or InfiniBand device as the peer.
#include "unprivileged.hpp"

#include <fstream>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

namespace vmtest {
namespace {

uint64_t read_u64(const std::string &path)
{
    std::ifstream f(path);
    uint64_t v = 0;
    if (!(f >> v))
        fail(__FILE__, __LINE__, "cannot read " + path);
    return v;
}

void write_str(const std::string &path, const std::string &value)
{
    std::ofstream f(path);
    f << value;
    f.close();
    if (!f)
        fail(__FILE__, __LINE__, "cannot write " + value + " to " + path);
}

void check_node_mode()
{
    struct stat st {};
    CHECK(::stat(GDRHOOK_DEVICE_PATH, &st) == 0);
    std::printf("access: %s mode %03o\n", GDRHOOK_DEVICE_PATH, st.st_mode & 0777);
    CHECK((st.st_mode & 0777) == 0666);
}

// Nobody, in no group, with a 64 KiB locked-memory limit: opens the node,
// pins its whole limit of host memory, is refused one page more (ENOMEM,
// as ibv_reg_mr is), and pins it once a pin is gone.
void check_open_to_all_within_memlock()
{
    const bool ok = in_child([] {
        CHECK(::setgroups(0, nullptr) == 0);
        become_nobody();
        Gdrhook dev;
        CHECK(dev.ok());
        char *pages = map_touched_pages(kMemlockPages + 1);
        uint64_t whole = 0, more = 0;
        CHECK_OK(pin_host(dev, pages, kMemlock, &whole));
        CHECK_ERR(pin_host(dev, pages + kMemlock, kPage, &more), ENOMEM);
        CHECK_OK(dev.unpin(whole));
        CHECK_OK(pin_host(dev, pages + kMemlock, kPage, &more));
        CHECK_OK(dev.unpin(more));
        return 0;
    });
    CHECK(ok);
    std::printf("access: nobody, in no group, pinned its %llu KiB of locked memory, refused past "
                "it\n",
                static_cast<unsigned long long>(kMemlock / 1024));
}

// Two open files of one user share the cap; what counts is what is pinned.
void check_user_cap()
{
    HostBuffer buf(4 * kGpuPage);
    const uint64_t gpu_page_pages = kGpuPage / 4096;
    set_param("gdrhook", "max_pinned_pages_per_user", std::to_string(3 * gpu_page_pages));
    Gdrhook a, b;
    CHECK(a.ok() && b.ok());
    uint64_t ha1, ha2, hb1, hb2;
    CHECK_OK(a.pin_nvp2p(buf.data(), 2 * kGpuPage, &ha1));
    // The same memory again, through another file: pinned again, counted again.
    CHECK_OK(b.pin_nvp2p(buf.data(), kGpuPage, &hb1));
    CHECK_ERR(b.pin_nvp2p(buf.data(), kGpuPage, &hb2), ENOSPC);
    CHECK_ERR(a.pin_nvp2p(buf.data() + 3 * kGpuPage, kGpuPage, &ha2), ENOSPC);
    CHECK_OK(a.unpin(ha1));
    CHECK_OK(b.pin_nvp2p(buf.data(), 2 * kGpuPage, &hb2));
    CHECK_OK(b.unpin(hb1));
    CHECK_OK(b.unpin(hb2));
    set_param("gdrhook", "max_pinned_pages_per_user", std::to_string(1ULL << 28));
    std::printf("access: per-user cap of 3 GPU pages held across two files\n");
}

// Opening files must raise the opener's cgroup memory by what the files take.
void check_memcg_charge()
{
    ::mkdir("/sys/fs/cgroup", 0755);
    if (::access("/sys/fs/cgroup/cgroup.controllers", F_OK) != 0)
        CHECK(shell("mount -t cgroup2 none /sys/fs/cgroup") == 0);
    write_str("/sys/fs/cgroup/cgroup.subtree_control", "+memory");
    ::mkdir("/sys/fs/cgroup/gdrhook-test", 0755);
    constexpr int kFiles = 200;
    const bool ok = in_child([] {
        write_str("/sys/fs/cgroup/gdrhook-test/cgroup.procs", std::to_string(::getpid()));
        rlimit r{4096, 4096};
        CHECK(::setrlimit(RLIMIT_NOFILE, &r) == 0);
        const uint64_t before = read_u64("/sys/fs/cgroup/gdrhook-test/memory.current");
        std::vector<Gdrhook> files(kFiles);
        for (auto &f : files)
            CHECK(f.ok());
        const uint64_t after = read_u64("/sys/fs/cgroup/gdrhook-test/memory.current");
        // Each open file holds an event ring of event_queue_len records.
        const uint64_t ring =
            read_u64("/sys/module/gdrhook/parameters/event_queue_len") * sizeof(gdrhook_event);
        std::printf("access: %d opens charged %" PRIu64
                    " bytes to the cgroup (rings alone: %" PRIu64 ")\n",
                    kFiles, after - before, kFiles * ring);
        return after - before >= kFiles * ring * 8 / 10 ? 0 : 1;
    });
    ::rmdir("/sys/fs/cgroup/gdrhook-test");
    CHECK(ok);
}

// Drops CAP_SYS_RAWIO from this (child) process.
void drop_rawio()
{
    __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct d[2]{};
    CHECK(::syscall(SYS_capget, &h, d) == 0);
    d[CAP_SYS_RAWIO / 32].effective &= ~(1u << (CAP_SYS_RAWIO % 32));
    d[CAP_SYS_RAWIO / 32].permitted &= ~(1u << (CAP_SYS_RAWIO % 32));
    CHECK(::syscall(SYS_capset, &h, d) == 0);
}

void check_peer_rule()
{
    const bool ok = in_child([] {
        drop_rawio();
        Gdrhook dev;
        HostBuffer buf(kGpuPage);
        VgemBuffer vb(4 * 4096);
        CHECK(dev.ok() && vb.ok());
        const PciAddr bridge = first_pci_device(); // class 0x06: a host bridge
        gdrhook_ioc_pin p = Gdrhook::nvp2p_req(buf.data(), kGpuPage, GDRHOOK_PIN_PEER);
        p.peer_domain = bridge.domain;
        p.peer_bdf = bridge.bdf;
        CHECK_ERR(dev.pin(&p), EPERM);
        uint64_t h;
        CHECK_ERR(dev.pin_dmabuf(vb.fd(), 0, 4096, bridge, &h), EPERM);
        // No peer: the caller's own memory, as before.
        CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h));
        CHECK_OK(dev.unpin(h));
        return 0;
    });
    CHECK(ok);
    std::printf("access: without CAP_SYS_RAWIO a host bridge is refused as the peer\n");
}

} // namespace

int test_opener_only()
{
    {
        Gdrhook dev(O_RDWR | O_NONBLOCK);
        Provider tp;
        HostBuffer buf(kGpuPage);
        CHECK(dev.ok() && tp.ok());
        uint64_t h;
        CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h, 0, 42));
        uint32_t fired = 0;
        CHECK_OK(tp.fire(buf.data(), kGpuPage, &fired));
        CHECK(fired == 1);
        const bool child_ok = in_child([&dev] {
            gdrhook_event e;
            const ssize_t n = ::read(dev.fd(), &e, sizeof(e));
            const int err = n < 0 ? errno : 0;
            pollfd p{dev.fd(), POLLIN, 0};
            const int r = ::poll(&p, 1, 0);
            std::printf("opener_only: child read -> %zd (%s), poll -> %d revents %#x\n", n,
                        std::strerror(err), r, p.revents);
            return n < 0 && err == EPERM && !(p.revents & POLLIN) ? 0 : 1;
        });
        std::vector<gdrhook_event> ev;
        CHECK_OK(dev.read_events(&ev));
        std::printf("opener_only: the opener read %zu event(s)\n", ev.size());
        CHECK(child_ok);
        CHECK(ev.size() == 1 && ev[0].handle == h && ev[0].user_tag == 42);
        CHECK_OK(dev.unpin(h));
    }
    check_no_leaks("opener_only");
    return 0;
}

int test_errnos()
{
    {
        Gdrhook dev;
        HostBuffer buf(kGpuPage);
        CHECK(dev.ok());
        struct {
            int driver; // what the provider's get_pages returns, negated
            int want;   // what the caller must see
        } cases[] = {
            {524, EOPNOTSUPP}, // ENOTSUPP, NVIDIA's "not supported"
            {529, EIO},        // EIOCBQUEUED: kernel-internal, no user meaning
            {EINVAL, EINVAL},  // a user-visible errno passes unchanged
            {ENOMEM, ENOMEM},
        };
        for (auto &c : cases) {
            set_param("gdrhook_tp", "get_pages_errno", std::to_string(c.driver));
            uint64_t h;
            const int got = dev.pin_nvp2p(buf.data(), kGpuPage, &h);
            std::printf("errnos: driver -%d -> PIN %d (%s)\n", c.driver, got, std::strerror(got));
            set_param("gdrhook_tp", "get_pages_errno", "0");
            CHECK_ERR(got, c.want);
        }
    }
    check_no_leaks("errnos");
    return 0;
}

int test_access()
{
    check_node_mode();
    check_open_to_all_within_memlock();
    check_user_cap();
    check_memcg_charge();
    check_peer_rule();
    check_no_leaks("access");
    return 0;
}

} // namespace vmtest
