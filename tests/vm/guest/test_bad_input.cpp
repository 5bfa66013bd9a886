// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_bad_input.cpp - "What must be shown" 4 (the list; the fuzz loop is
// test_fuzz.cpp) and the ownership rules of property 6: every bad request
// answered with its errno, and nothing left pinned afterwards.
#include "common.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>

namespace vmtest {
namespace {

void check_pin_shape(const Gdrhook &dev, const HostBuffer &buf)
{
    const char *a = buf.data();
    gdrhook_ioc_pin p;

    // length 0
    p = Gdrhook::nvp2p_req(a, 0);
    CHECK_ERR(dev.pin(&p), EINVAL);
    // overflowing ranges
    p = Gdrhook::nvp2p_req(reinterpret_cast<void *>(~0ULL - kGpuPage + 1), 2 * kGpuPage);
    CHECK_ERR(dev.pin(&p), EOVERFLOW);
    p = Gdrhook::nvp2p_req(a, ~0ULL & ~(kGpuPage - 1));
    CHECK_ERR(dev.pin(&p), EOVERFLOW);
    // unaligned ranges
    p = Gdrhook::nvp2p_req(a + 4096, kGpuPage);
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::nvp2p_req(a, kGpuPage + 4096);
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::nvp2p_req(a + 1, kGpuPage);
    CHECK_ERR(dev.pin(&p), EINVAL);
    // unknown backend, unknown flags, reserved fields, outputs not zeroed
    p = Gdrhook::nvp2p_req(a, kGpuPage);
    p.backend = 0;
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::nvp2p_req(a, kGpuPage);
    p.backend = GDRHOOK_BACKEND_HOST_PAGES + 1;
    CHECK_ERR(dev.pin(&p), EINVAL);
    // host pages: page aligned, no dma-buf fd, never persistent
    p = Gdrhook::host_req(a + 1, 4096);
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::host_req(a, 4095);
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::host_req(a, 4096);
    p.dmabuf_fd = 0;
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::host_req(a, 4096, GDRHOOK_PIN_PERSISTENT);
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::nvp2p_req(a, kGpuPage, 1u << 7);
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::nvp2p_req(a, kGpuPage);
    p.reserved0 = 1;
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::nvp2p_req(a, kGpuPage);
    p.reserved1 = 1;
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::nvp2p_req(a, kGpuPage);
    p.handle = 5;
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::nvp2p_req(a, kGpuPage);
    p.dmabuf_fd = 0; // nv-p2p takes no fd
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::nvp2p_req(a, kGpuPage);
    p.peer_bdf = 8; // a peer without GDRHOOK_PIN_PEER
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::nvp2p_req(a, kGpuPage, GDRHOOK_PIN_PEER);
    p.peer_domain = 0x7777; // no such PCI device
    CHECK_ERR(dev.pin(&p), ENODEV);
}

void check_not_owned(const Gdrhook &dev)
{
    gdrhook_ioc_pin p;
    // kernel memory
    p = Gdrhook::nvp2p_req(reinterpret_cast<void *>(0xffff888000000000ULL), kGpuPage);
    CHECK_ERR(dev.pin(&p), EFAULT);
    // memory the process does not have (mapped, then unmapped)
    HostBuffer *gone = new HostBuffer(4 * kGpuPage);
    char *addr = gone->data();
    delete gone;
    p = Gdrhook::nvp2p_req(addr, kGpuPage);
    CHECK_ERR(dev.pin(&p), EFAULT);
    // memory the process may only read
    void *ro = ::mmap(nullptr, 2 * kGpuPage, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(ro != MAP_FAILED);
    char *roa = reinterpret_cast<char *>((reinterpret_cast<uintptr_t>(ro) + kGpuPage - 1) &
                                         ~(kGpuPage - 1));
    p = Gdrhook::nvp2p_req(roa, kGpuPage);
    CHECK_ERR(dev.pin(&p), EFAULT);
    ::munmap(ro, 2 * kGpuPage);
    // the NULL page
    p = Gdrhook::nvp2p_req(nullptr, kGpuPage);
    CHECK_ERR(dev.pin(&p), EFAULT);
}

void check_handles(const Gdrhook &dev, const HostBuffer &buf)
{
    gdrhook_ioc_query q;
    std::vector<uint64_t> addrs(4);
    for (uint64_t bad : {0ULL, 1ULL, 12345678ULL, 1ULL << 31, 1ULL << 40, ~0ULL}) {
        CHECK_ERR(dev.unpin(bad), ENOENT);
        CHECK_ERR(dev.query(bad, &q), ENOENT);
        CHECK_ERR(dev.get_pages(bad, 0, &addrs), ENOENT);
        addrs.resize(4);
    }
    // A handle from another open file is unknown here, and survives.
    Gdrhook other;
    uint64_t h;
    CHECK_OK(other.pin_nvp2p(buf.data(), kGpuPage, &h));
    CHECK_ERR(dev.query(h, &q), ENOENT);
    CHECK_ERR(dev.unpin(h), ENOENT);
    CHECK_ERR(dev.unpin_batch(&h, 1), ENOENT);
    CHECK_OK(other.query(h, &q));

    // QUERY/GET_PAGES argument checks
    q = gdrhook_ioc_query{};
    q.handle = h;
    q.reserved = 1;
    CHECK_ERR(other.call(GDRHOOK_IOCTL_QUERY, &q), EINVAL);
    gdrhook_ioc_get_pages g{};
    g.handle = h;
    g.addrs = reinterpret_cast<uintptr_t>(addrs.data());
    g.max_entries = 0;
    CHECK_ERR(other.call(GDRHOOK_IOCTL_GET_PAGES, &g), EINVAL);
    g.max_entries = 4;
    g.first = 1; // one page only
    CHECK_ERR(other.call(GDRHOOK_IOCTL_GET_PAGES, &g), EINVAL);
    g.first = 0;
    g.reserved = 1;
    CHECK_ERR(other.call(GDRHOOK_IOCTL_GET_PAGES, &g), EINVAL);
    g.reserved = 0;
    g.addrs = 0x10; // not writable
    CHECK_ERR(other.call(GDRHOOK_IOCTL_GET_PAGES, &g), EFAULT);
    CHECK_OK(other.unpin(h));
}

void check_batches(const Gdrhook &dev, const HostBuffer &buf)
{
    std::vector<uint64_t> hs(GDRHOOK_UNPIN_BATCH_MAX + 1, 0);
    gdrhook_ioc_unpin_batch b;
    CHECK_ERR(dev.unpin_batch(hs.data(), 0, &b), EINVAL);
    CHECK_ERR(dev.unpin_batch(hs.data(), GDRHOOK_UNPIN_BATCH_MAX + 1, &b), E2BIG);
    CHECK_ERR(dev.unpin_batch(hs.data(), ~0u, &b), E2BIG);
    CHECK_ERR(dev.unpin_batch(nullptr, 1, &b), EFAULT);
    b = gdrhook_ioc_unpin_batch{};
    b.handles = reinterpret_cast<uintptr_t>(hs.data());
    b.count = 1;
    b.reserved = 1;
    CHECK_ERR(dev.call(GDRHOOK_IOCTL_UNPIN_BATCH, &b), EINVAL);

    // A mixed batch unpins what it can and names the first failure.
    std::vector<uint64_t> mix;
    for (int i = 0; i < 5; i++) {
        uint64_t h;
        CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h));
        mix.push_back(h);
    }
    mix.insert(mix.begin() + 2, 999999);
    mix.push_back(mix[0]); // a duplicate: gone by the time it is reached
    CHECK_ERR(dev.unpin_batch(mix.data(), static_cast<uint32_t>(mix.size()), &b), ENOENT);
    CHECK(b.unpinned == 5 && b.first_failed == 2);
    CHECK(gdr_counter("pins_live") == 0);
}

void check_dmabuf_inputs(const Gdrhook &dev)
{
    VgemBuffer vb(4 * 4096);
    CHECK(vb.ok());
    const PciAddr peer = first_pci_device();
    gdrhook_ioc_pin p;

    // not a dma-buf
    Fd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
    p = Gdrhook::dmabuf_req(devnull.get(), 0, 4096, peer);
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::dmabuf_req(dev.fd(), 0, 4096, peer);
    CHECK_ERR(dev.pin(&p), EINVAL);
    // closed and never-opened fds
    int closed = ::dup(vb.fd());
    ::close(closed);
    p = Gdrhook::dmabuf_req(closed, 0, 4096, peer);
    CHECK_ERR(dev.pin(&p), EBADF);
    p = Gdrhook::dmabuf_req(-1, 0, 4096, peer);
    CHECK_ERR(dev.pin(&p), EBADF);
    p = Gdrhook::dmabuf_req(100000, 0, 4096, peer);
    CHECK_ERR(dev.pin(&p), EBADF);
    // ranges outside the buffer, unaligned, empty, overflowing
    p = Gdrhook::dmabuf_req(vb.fd(), 4 * 4096, 4096, peer);
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::dmabuf_req(vb.fd(), 0, 5 * 4096, peer);
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::dmabuf_req(vb.fd(), 100, 4096, peer);
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::dmabuf_req(vb.fd(), 0, 100, peer);
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::dmabuf_req(vb.fd(), 0, 0, peer);
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::dmabuf_req(vb.fd(), ~0ULL & ~4095ULL, 8192, peer);
    CHECK_ERR(dev.pin(&p), EOVERFLOW);
    // no peer device, a missing one, persistent (nv-p2p only)
    p = Gdrhook::dmabuf_req(vb.fd(), 0, 4096, peer);
    p.flags = 0;
    CHECK_ERR(dev.pin(&p), EINVAL);
    p = Gdrhook::dmabuf_req(vb.fd(), 0, 4096, PciAddr{0x5555, 0});
    CHECK_ERR(dev.pin(&p), ENODEV);
    p = Gdrhook::dmabuf_req(vb.fd(), 0, 4096, peer);
    p.flags |= GDRHOOK_PIN_PERSISTENT;
    CHECK_ERR(dev.pin(&p), EINVAL);
}

// Structures of the wrong size (truncated or not ours), other commands.
void check_ioctl_numbers(const Gdrhook &dev)
{
    char buf[256] = {};
    const unsigned long cmds[] = {GDRHOOK_IOCTL_GET_VERSION, GDRHOOK_IOCTL_PIN,
                                  GDRHOOK_IOCTL_UNPIN,       GDRHOOK_IOCTL_UNPIN_BATCH,
                                  GDRHOOK_IOCTL_QUERY,       GDRHOOK_IOCTL_GET_PAGES};
    for (unsigned long cmd : cmds) {
        const unsigned size = _IOC_SIZE(cmd);
        const unsigned long shorter = _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), size - 1);
        const unsigned long longer = _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), size + 8);
        const unsigned long nodir = _IOC(_IOC_NONE, _IOC_TYPE(cmd), _IOC_NR(cmd), 0);
        CHECK_ERR(dev.call(shorter, buf), EINVAL);
        CHECK_ERR(dev.call(longer, buf), EINVAL);
        CHECK_ERR(dev.call(nodir, buf), EINVAL);
        CHECK_ERR(dev.call(cmd, nullptr), EFAULT);
    }
    CHECK_ERR(dev.call(_IOWR(GDRHOOK_IOCTL_MAGIC, 0x06, gdrhook_ioc_pin), buf), ENOTTY);
    CHECK_ERR(dev.call(_IOWR(GDRHOOK_IOCTL_MAGIC, 0xff, gdrhook_ioc_pin), buf), ENOTTY);
    CHECK_ERR(dev.call(_IOWR('x', 0x01, gdrhook_ioc_pin), buf), ENOTTY);
    CHECK_ERR(dev.call(0, buf), ENOTTY);
}

void check_limits(const HostBuffer &buf)
{
    set_param("gdrhook", "max_handles_per_file", "8");
    {
        Gdrhook dev;
        uint64_t h;
        for (int i = 0; i < 8; i++)
            CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h));
        CHECK_ERR(dev.pin_nvp2p(buf.data(), kGpuPage, &h), ENOSPC);
        CHECK(gdr_counter("pins_live") == 8);
    } // closing releases all 8
    CHECK(gdr_counter("pins_live") == 0);
    set_param("gdrhook", "max_handles_per_file", "65536");

    set_param("gdrhook", "max_pinned_bytes_per_file", std::to_string(2 * kGpuPage));
    {
        Gdrhook dev;
        uint64_t h, h2;
        CHECK_ERR(dev.pin_nvp2p(buf.data(), 3 * kGpuPage, &h), ENOSPC);
        CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h));
        CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h2));
        CHECK_ERR(dev.pin_nvp2p(buf.data(), kGpuPage, &h), ENOSPC);
        CHECK_OK(dev.unpin(h2));
        CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h2));
    }
    set_param("gdrhook", "max_pinned_bytes_per_file", std::to_string(1ULL << 40));
}

// A process pins only its own memory: after fork the child may not use the
// parent's file; the pins live until the last reference to the file goes.
// GET_PAGES needs CAP_SYS_RAWIO unless the module parameter allows it.
void check_ownership(const HostBuffer &buf)
{
    Gdrhook dev;
    uint64_t h;
    CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h));
    pid_t pid = ::fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        gdrhook_ioc_query q;
        uint64_t h2;
        int ok = dev.query(h, &q) == EPERM && dev.unpin(h) == EPERM &&
                 dev.pin_nvp2p(buf.data(), kGpuPage, &h2) == EPERM;
        gdrhook_ioc_version v{};
        ok = ok && dev.version(&v) == 0;
        std::_Exit(ok ? 0 : 1);
    }
    int st = 0;
    CHECK(::waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    gdrhook_ioc_query q;
    CHECK_OK(dev.query(h, &q)); // the child's exit closed its copy, not ours
    CHECK(gdr_counter("pins_live") == 1);

    pid = ::fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        Gdrhook mine; // opened as root, then privileges dropped
        if (::setresgid(65534, 65534, 65534) || ::setresuid(65534, 65534, 65534))
            std::_Exit(2);
        uint64_t hh;
        std::vector<uint64_t> addrs(1);
        gdrhook_ioc_version v{};
        int ok = mine.pin_nvp2p(buf.data(), kGpuPage, &hh) == 0 &&
                 mine.get_pages(hh, 0, &addrs) == EPERM && mine.version(&v) == 0 &&
                 !(v.features & GDRHOOK_FEATURE_GET_PAGES);
        std::_Exit(ok ? 0 : 1);
    }
    CHECK(::waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);

    set_param("gdrhook", "allow_unprivileged_get_pages", "1");
    pid = ::fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        Gdrhook mine;
        if (::setresgid(65534, 65534, 65534) || ::setresuid(65534, 65534, 65534))
            std::_Exit(2);
        uint64_t hh;
        std::vector<uint64_t> addrs(1);
        int ok =
            mine.pin_nvp2p(buf.data(), kGpuPage, &hh) == 0 && mine.get_pages(hh, 0, &addrs) == 0;
        std::_Exit(ok ? 0 : 1);
    }
    CHECK(::waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    set_param("gdrhook", "allow_unprivileged_get_pages", "0");

    CHECK(gdr_counter("pins_live") == 1);
    dev.close();
    CHECK(gdr_counter("pins_live") == 0);
}

} // namespace

int test_bad_input()
{
    HostBuffer buf(8 * kGpuPage);
    {
        Gdrhook dev;
        CHECK(dev.ok());
        check_pin_shape(dev, buf);
        check_not_owned(dev);
        check_handles(dev, buf);
        check_batches(dev, buf);
        check_dmabuf_inputs(dev);
        check_ioctl_numbers(dev);
        CHECK(gdr_counter("pins_live") == 0);
    }
    check_limits(buf);
    check_ownership(buf);
    check_no_leaks("after bad_input");
    return 0;
}

} // namespace vmtest
