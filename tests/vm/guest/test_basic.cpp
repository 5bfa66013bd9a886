// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_basic.cpp - "What must be shown" 1: pin, query, get pages, unpin and
// batch unpin of 10,000 handles, on both backends; revocation events and
// poll(); the event queue's overflow record.
#include "common.hpp"

#include <poll.h>

namespace vmtest {
namespace {

constexpr uint32_t kHandles = 10000; // in one UNPIN_BATCH
constexpr uint32_t kSingles = 1000;  // unpinned one by one first

void check_version(const Gdrhook &dev)
{
    gdrhook_ioc_version v{};
    CHECK_OK(dev.version(&v));
    CHECK(v.abi_major == GDRHOOK_ABI_MAJOR);
    CHECK(v.unpin_batch_max == GDRHOOK_UNPIN_BATCH_MAX);
    const uint32_t want = GDRHOOK_FEATURE_NVP2P | GDRHOOK_FEATURE_NVP2P_PERSISTENT |
                          GDRHOOK_FEATURE_DMABUF | GDRHOOK_FEATURE_GET_PAGES;
    CHECK((v.features & want) == want);
}

// One pin checked end to end: QUERY answers what PIN was given, GET_PAGES
// answers the physical pages behind the range (no IOMMU: DMA == physical).
void check_nvp2p_single(const Gdrhook &dev, const HostBuffer &buf, uint32_t flags, bool peer)
{
    const uint64_t len = 16 * kGpuPage;
    gdrhook_ioc_pin p = Gdrhook::nvp2p_req(buf.data() + kGpuPage, len, flags, 0xfeed);
    if (peer)
        name_first_pci_device_as_peer(&p);
    CHECK_OK(dev.pin(&p));
    CHECK(p.handle != 0);
    CHECK(p.page_size == kGpuPage);
    CHECK(p.page_count == 16);

    gdrhook_ioc_query q;
    CHECK_OK(dev.query(p.handle, &q));
    CHECK(q.state == GDRHOOK_STATE_VALID);
    CHECK(q.backend == GDRHOOK_BACKEND_NVP2P);
    CHECK(q.addr == p.addr && q.length == len && q.user_tag == 0xfeed);
    CHECK(q.page_size == kGpuPage && q.page_count == 16);
    CHECK(q.flags == p.flags);

    std::vector<uint64_t> addrs(64);
    CHECK_OK(dev.get_pages(p.handle, 0, &addrs));
    CHECK(addrs.size() == 16);
    for (size_t i = 0; i < addrs.size(); i++)
        CHECK(addrs[i] == phys_addr(buf.data() + kGpuPage + i * kGpuPage));
    // A window of the table.
    std::vector<uint64_t> tail(4);
    CHECK_OK(dev.get_pages(p.handle, 14, &tail));
    CHECK(tail.size() == 2 && tail[0] == addrs[14] && tail[1] == addrs[15]);

    CHECK(gdr_counter("pins_live") == 1);
    CHECK_OK(dev.unpin(p.handle));
    CHECK_ERR(dev.unpin(p.handle), ENOENT);
    CHECK(gdr_counter("pins_live") == 0);
}

// kSingles + kHandles pins: query and get pages of each, kSingles (every
// 11th) unpinned alone, then the other kHandles in one UNPIN_BATCH; a second
// batch of the same handles finds none.
void check_many(const Gdrhook &dev, const std::vector<uint64_t> &handles, uint64_t page_size)
{
    CHECK(handles.size() == kSingles + kHandles);
    CHECK(gdr_counter("pins_live") == kSingles + kHandles);
    std::vector<uint64_t> addrs;
    for (uint64_t h : handles) {
        gdrhook_ioc_query q;
        CHECK_OK(dev.query(h, &q));
        CHECK(q.state == GDRHOOK_STATE_VALID && q.page_size == page_size);
        addrs.assign(q.page_count, 0);
        CHECK_OK(dev.get_pages(h, 0, &addrs));
        CHECK(addrs.size() == q.page_count);
    }
    std::vector<uint64_t> batch;
    for (uint32_t i = 0; i < handles.size(); i++) {
        if (i % 11 == 0)
            CHECK_OK(dev.unpin(handles[i]));
        else
            batch.push_back(handles[i]);
    }
    CHECK(batch.size() == kHandles);
    CHECK(gdr_counter("pins_live") == kHandles);
    gdrhook_ioc_unpin_batch b;
    CHECK_OK(dev.unpin_batch(batch.data(), static_cast<uint32_t>(batch.size()), &b));
    CHECK(b.unpinned == kHandles);
    CHECK(gdr_counter("pins_live") == 0);
    CHECK_ERR(dev.unpin_batch(batch.data(), static_cast<uint32_t>(batch.size()), &b), ENOENT);
    CHECK(b.unpinned == 0 && b.first_failed == 0);
}

void check_nvp2p_many(const Gdrhook &dev, const HostBuffer &buf)
{
    const size_t chunks = buf.size() / kGpuPage;
    std::vector<uint64_t> handles;
    for (uint32_t i = 0; i < kSingles + kHandles; i++) {
        uint64_t h;
        CHECK_OK(dev.pin_nvp2p(buf.data() + (i % chunks) * kGpuPage, kGpuPage, &h, 0, i));
        handles.push_back(h);
    }
    check_many(dev, handles, kGpuPage);
}

void check_dmabuf(const Gdrhook &dev)
{
    VgemBuffer vb(16 * 4096);
    CHECK(vb.ok());
    CHECK(vb.size() == 16 * 4096);
    const PciAddr peer = first_pci_device();

    // The whole buffer's DMA addresses: distinct, page aligned. (A CPU
    // mapping of a vgem buffer is VM_PFNMAP, which /proc/self/pagemap does
    // not report, so the addresses are checked for consistency instead.)
    uint64_t whole;
    CHECK_OK(dev.pin_dmabuf(vb.fd(), 0, vb.size(), peer, &whole));
    std::vector<uint64_t> all(16);
    CHECK_OK(dev.get_pages(whole, 0, &all));
    CHECK(all.size() == 16);
    for (size_t i = 0; i < all.size(); i++) {
        CHECK(all[i] != 0 && all[i] % 4096 == 0);
        for (size_t j = 0; j < i; j++)
            CHECK(all[i] != all[j]);
    }

    // A window of it: same pages, shifted by the offset.
    uint64_t h;
    CHECK_OK(dev.pin_dmabuf(vb.fd(), 4096, 8 * 4096, peer, &h, 77));
    gdrhook_ioc_query q;
    CHECK_OK(dev.query(h, &q));
    CHECK(q.state == GDRHOOK_STATE_VALID && q.backend == GDRHOOK_BACKEND_DMABUF);
    CHECK(q.addr == 4096 && q.length == 8 * 4096 && q.page_size == 4096 && q.page_count == 8);
    CHECK(q.user_tag == 77);
    std::vector<uint64_t> addrs(8);
    CHECK_OK(dev.get_pages(h, 0, &addrs));
    CHECK(addrs.size() == 8);
    for (size_t i = 0; i < 8; i++)
        CHECK(addrs[i] == all[i + 1]);
    CHECK_OK(dev.unpin(h));
    CHECK_OK(dev.unpin(whole));

    // The pin holds the buffer: closing our fd first must not matter.
    int dup = ::dup(vb.fd());
    CHECK(dup >= 0);
    CHECK_OK(dev.pin_dmabuf(dup, 0, vb.size(), peer, &h));
    ::close(dup);
    CHECK_OK(dev.query(h, &q));
    CHECK_OK(dev.unpin(h));

    std::vector<uint64_t> handles;
    for (uint32_t i = 0; i < kSingles + kHandles; i++) {
        CHECK_OK(dev.pin_dmabuf(vb.fd(), (i % 16) * 4096, 4096, peer, &h, i));
        handles.push_back(h);
    }
    check_many(dev, handles, 4096);
}

// The provider frees the memory: a revocation event, QUERY says revoked,
// GET_PAGES refuses, the handle stays until unpinned.
void check_revocation_events(const Gdrhook &dev, const HostBuffer &buf, const Provider &tp)
{
    uint64_t h1, h2;
    CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h1, 0, 111));
    CHECK_OK(dev.pin_nvp2p(buf.data() + kGpuPage, kGpuPage, &h2, 0, 222));

    pollfd pfd{dev.fd(), POLLIN, 0};
    CHECK(::poll(&pfd, 1, 0) == 0);
    gdrhook_event e;
    CHECK(::read(dev.fd(), &e, sizeof(e) - 1) < 0 && errno == EINVAL);
    {
        Gdrhook nb(O_RDWR | O_NONBLOCK);
        CHECK(::read(nb.fd(), &e, sizeof(e)) < 0 && errno == EAGAIN);
    }

    uint32_t fired = 0;
    CHECK_OK(tp.fire(buf.data(), kGpuPage, &fired));
    CHECK(fired == 1);
    CHECK(::poll(&pfd, 1, 1000) == 1 && (pfd.revents & POLLIN));
    CHECK(::read(dev.fd(), &e, sizeof(e)) == sizeof(e));
    CHECK(e.type == GDRHOOK_EVENT_REVOKED_NVP2P && e.handle == h1 && e.user_tag == 111);
    CHECK(e.addr == reinterpret_cast<uintptr_t>(buf.data()) && e.length == kGpuPage);
    pfd.revents = 0;
    CHECK(::poll(&pfd, 1, 0) == 0);

    gdrhook_ioc_query q;
    CHECK_OK(dev.query(h1, &q));
    CHECK(q.state == GDRHOOK_STATE_REVOKED);
    CHECK_OK(dev.query(h2, &q));
    CHECK(q.state == GDRHOOK_STATE_VALID);
    std::vector<uint64_t> addrs(1);
    CHECK_ERR(dev.get_pages(h1, 0, &addrs), ENODEV);
    CHECK_OK(dev.unpin(h1));
    CHECK_OK(dev.unpin(h2));
    CHECK(tp_counter("tables_live") == 0);

    // A persistent pin has no callback: firing does nothing to it.
    CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h1, GDRHOOK_PIN_PERSISTENT));
    CHECK_OK(tp.fire(buf.data(), kGpuPage, &fired));
    CHECK(fired == 0);
    CHECK_OK(dev.query(h1, &q));
    CHECK(q.state == GDRHOOK_STATE_VALID);
    CHECK_OK(dev.unpin(h1));
}

// More revocations than the queue holds: the reader learns how many it lost.
void check_event_overflow(const HostBuffer &buf, const Provider &tp)
{
    Gdrhook dev(O_RDWR | O_NONBLOCK);
    CHECK(dev.ok());
    const uint32_t n = 1100; // event_queue_len is 1024
    std::vector<uint64_t> handles;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t h;
        CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h));
        handles.push_back(h);
    }
    uint32_t fired = 0;
    CHECK_OK(tp.fire(buf.data(), kGpuPage, &fired));
    CHECK(fired == n);
    std::vector<gdrhook_event> ev;
    CHECK_OK(dev.read_events(&ev));
    CHECK(ev.size() == 1025);
    CHECK(ev[0].type == GDRHOOK_EVENT_OVERFLOW && ev[0].addr == n - 1024);
    for (size_t i = 1; i < ev.size(); i++)
        CHECK(ev[i].type == GDRHOOK_EVENT_REVOKED_NVP2P && ev[i].handle == handles[i - 1]);
    gdrhook_ioc_unpin_batch b;
    CHECK_OK(dev.unpin_batch(handles.data(), n, &b));
    CHECK(b.unpinned == n);
}

} // namespace

int test_basic()
{
    Gdrhook dev;
    Provider tp;
    CHECK(dev.ok() && tp.ok());
    check_version(dev);

    HostBuffer buf(64 * kGpuPage); // 4 MiB
    Stopwatch sw;
    check_nvp2p_single(dev, buf, 0, false);
    check_nvp2p_single(dev, buf, 0, true);
    check_nvp2p_single(dev, buf, GDRHOOK_PIN_PERSISTENT, false);
    check_nvp2p_single(dev, buf, GDRHOOK_PIN_PERSISTENT, true);
    check_nvp2p_many(dev, buf);
    std::printf("basic: nv-p2p: single pins, %u handles pinned, queried, read; %u unpinned singly, "
                "%u in one "
                "UNPIN_BATCH, in %.1f s\n",
                kSingles + kHandles, kSingles, kHandles, sw.seconds());
    Stopwatch sw2;
    check_dmabuf(dev);
    std::printf("basic: dma-buf: single pins, %u handles pinned, queried, read; %u unpinned "
                "singly, %u in one "
                "UNPIN_BATCH, in %.1f s\n",
                kSingles + kHandles, kSingles, kHandles, sw2.seconds());
    check_revocation_events(dev, buf, tp);
    check_event_overflow(buf, tp);
    dev.close();
    check_no_leaks("after basic");
    return 0;
}

} // namespace vmtest
