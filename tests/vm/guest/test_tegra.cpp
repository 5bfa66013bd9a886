// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_tegra.cpp - gdrhook.ko built for Tegra's nvidia_p2p_* (Jetson Orin,
// DRIVE), against the Tegra test provider (tests/kmods/provider/tegra/),
// which init.sh loads in place of the desktop one for this step.
//
// What Tegra changes, each checked here: the module says it is the Tegra
// flavour; ranges need only 4 KiB alignment (and PIN refuses anything
// less before the provider sees it); the free callback also runs inside
// put_pages, so an UNPIN, a close() and a failed PIN are each answered by
// exactly one callback, in which the module frees the table (the
// provider counts a second free, or a callback that frees nothing, as
// misuse); memory freed under a pin (the provider's FIRE) revokes it with
// one event and one callback, and the UNPIN that follows only puts the
// table (a second put, or a table never put, is misuse or a leak);
// an UNPIN racing the provider's free ends with one callback per table
// and every UNPIN answering 0. Every case ends with no table, no pinned
// page and no misuse left (and the kernel log is checked by run.sh: a
// double free or a use after free is a KASAN report on the debug kernel).
#include "common.hpp"

#include <atomic>
#include <thread>

namespace vmtest {
namespace {

constexpr const char *kTp = "/sys/kernel/debug/gdrhook_tp";
constexpr uint64_t kPage = 4096;

void check_tegra_flavour(const Gdrhook &dev)
{
    gdrhook_ioc_version v{};
    CHECK_OK(dev.version(&v));
    CHECK(v.features & GDRHOOK_FEATURE_NVP2P);
    CHECK(v.features & GDRHOOK_FEATURE_NVP2P_TEGRA);
    CHECK(!(v.features & GDRHOOK_FEATURE_NVP2P_PERSISTENT));
}

// 4 KiB, not 64 KiB: a range 4 KiB aligned pins, page by page; less
// alignment is EINVAL from the module itself (the provider, which counts
// an unaligned get_pages as misuse, never sees it).
void check_alignment(const Gdrhook &dev, const HostBuffer &buf)
{
    const uint64_t callbacks0 = tp_counter("callbacks");
    gdrhook_ioc_pin p = Gdrhook::nvp2p_req(buf.data() + kPage, 3 * kPage, 0, 7);
    CHECK_OK(dev.pin(&p));
    CHECK(p.page_size == kPage && p.page_count == 3);
    std::vector<uint64_t> addrs(8);
    CHECK_OK(dev.get_pages(p.handle, 0, &addrs));
    CHECK(addrs.size() == 3);
    for (size_t i = 0; i < addrs.size(); i++)
        CHECK(addrs[i] == phys_addr(buf.data() + kPage + i * kPage));
    CHECK_OK(dev.unpin(p.handle));
    // The callback ran inside put_pages, once, and freed the table.
    CHECK(tp_counter("callbacks") == callbacks0 + 1);

    uint64_t h = 0;
    CHECK_ERR(dev.pin_nvp2p(buf.data() + 512, kPage, &h), EINVAL);
    CHECK_ERR(dev.pin_nvp2p(buf.data(), kPage + 512, &h), EINVAL);
    CHECK_ERR(dev.pin_nvp2p(buf.data(), kPage, &h, GDRHOOK_PIN_PERSISTENT), EOPNOTSUPP);
    CHECK(tp_counter("callbacks") == callbacks0 + 1);
    check_no_leaks_but_files("tegra alignment");
}

// With a peer: the mapping's entries (contiguous pages merged, hw_len)
// come back one address per page; no IOMMU, so DMA == physical.
void check_peer_mapping(const Gdrhook &dev, const HostBuffer &buf)
{
    gdrhook_ioc_pin p = Gdrhook::nvp2p_req(buf.data(), 16 * kPage, 0, 8);
    name_first_pci_device_as_peer(&p);
    CHECK_OK(dev.pin(&p));
    CHECK(p.page_count == 16);
    std::vector<uint64_t> addrs(32);
    CHECK_OK(dev.get_pages(p.handle, 0, &addrs));
    CHECK(addrs.size() == 16);
    for (size_t i = 0; i < addrs.size(); i++)
        CHECK(addrs[i] == phys_addr(buf.data() + i * kPage));
    CHECK_OK(dev.unpin(p.handle));
    check_no_leaks_but_files("tegra peer mapping");
}

// Freed under the pin: one event, one callback, the pages handed back at
// once; the table stays the module's handle until the UNPIN, which puts
// it without a second callback and answers 0 once.
void check_revocation(const Gdrhook &dev, const Provider &tp, const HostBuffer &buf, bool peer)
{
    const uint64_t callbacks0 = tp_counter("callbacks");
    gdrhook_ioc_pin p = Gdrhook::nvp2p_req(buf.data(), 8 * kPage, 0, 9);
    if (peer)
        name_first_pci_device_as_peer(&p);
    CHECK_OK(dev.pin(&p));
    uint32_t fired = 0;
    CHECK_OK(tp.fire(buf.data() + kPage, kPage, &fired));
    CHECK(fired == 1);
    std::vector<gdrhook_event> ev;
    CHECK_OK(wait_events(dev, 10000, &ev));
    CHECK(ev.size() == 1);
    CHECK(ev[0].type == GDRHOOK_EVENT_REVOKED_NVP2P && ev[0].handle == p.handle &&
          ev[0].user_tag == 9);
    gdrhook_ioc_query q;
    CHECK_OK(dev.query(p.handle, &q));
    CHECK(q.state == GDRHOOK_STATE_REVOKED);
    CHECK(tp_counter("pages_pinned") == 0);
    CHECK(tp_counter("tables_live") == 1);
    CHECK_OK(dev.unpin(p.handle));
    CHECK_ERR(dev.unpin(p.handle), ENOENT);
    CHECK(tp_counter("callbacks") == callbacks0 + 1);
    check_no_leaks_but_files("tegra revocation");
}

// close() with pins held, one of them mapped for a peer and one revoked:
// every table goes, each by exactly one callback.
void check_close_with_pins(const HostBuffer &buf)
{
    const uint64_t callbacks0 = tp_counter("callbacks");
    {
        Gdrhook dev(O_RDWR | O_NONBLOCK);
        Provider tp;
        CHECK(dev.ok() && tp.ok());
        uint64_t h = 0;
        CHECK_OK(dev.pin_nvp2p(buf.data(), 4 * kPage, &h));
        CHECK_OK(dev.pin_nvp2p(buf.data() + 4 * kPage, 4 * kPage, &h));
        gdrhook_ioc_pin p = Gdrhook::nvp2p_req(buf.data() + 8 * kPage, 4 * kPage);
        name_first_pci_device_as_peer(&p);
        CHECK_OK(dev.pin(&p));
        CHECK_OK(dev.pin_nvp2p(buf.data() + 12 * kPage, 4 * kPage, &h));
        uint32_t fired = 0;
        CHECK_OK(tp.fire(buf.data() + 12 * kPage, kPage, &fired));
        CHECK(fired == 1);
        CHECK(tp_counter("pages_pinned") == 12);
        CHECK(tp_counter("tables_live") == 4);
    }
    CHECK(tp_counter("callbacks") == callbacks0 + 4);
    check_no_leaks("tegra close with pins");
}

uint64_t race_iterations()
{
    const char *s = std::getenv("GDRHOOKTEST_VM_RACE_ITERS");
    // A tenth of the desktop races' length (CI's time; the PREEMPT_RT
    // kernel takes 12 s for 2,000 rounds).
    return (s ? std::strtoull(s, nullptr, 10) : 20000) / 10;
}

// UNPIN against the provider's free of the same table, with the
// provider's random delays: whichever comes first, one callback per
// table, every UNPIN answers 0, each event names the pin of its round.
void race_unpin_vs_free(const HostBuffer &buf, uint64_t iters)
{
    set_param("gdrhook_tp", "race_delay_us", "20");
    Gdrhook dev(O_RDWR | O_NONBLOCK);
    Provider tp;
    CHECK(dev.ok() && tp.ok());
    const uint64_t callbacks0 = tp_counter("callbacks");
    Barrier round(2);
    std::atomic<uint64_t> handle{0};
    std::atomic<bool> stop{false};
    std::thread firer([&] {
        for (;;) {
            round.wait(); // pinned
            if (stop.load())
                return;
            CHECK_OK(tp.fire(buf.data(), kPage));
            round.wait(); // both done
        }
    });
    uint64_t events = 0;
    for (uint64_t i = 0; i < iters; i++) {
        uint64_t h = 0;
        CHECK_OK(dev.pin_nvp2p(buf.data(), 4 * kPage, &h, 0, i));
        handle = h;
        round.wait();
        CHECK_OK(dev.unpin(h));
        round.wait();
        std::vector<gdrhook_event> ev;
        CHECK_OK(dev.read_events(&ev));
        for (const auto &e : ev)
            CHECK(e.type == GDRHOOK_EVENT_REVOKED_NVP2P && e.handle == h && e.user_tag == i);
        CHECK(ev.size() <= 1);
        events += ev.size();
    }
    stop = true;
    round.wait();
    firer.join();
    CHECK(tp_counter("callbacks") == callbacks0 + iters);
    set_param("gdrhook_tp", "race_delay_us", "0");
    std::printf("tegra: unpin vs free: %" PRIu64 " rounds, %" PRIu64 " revoked first, %" PRIu64
                " unpinned first\n",
                iters, events, iters - events);
    check_no_leaks_but_files("tegra unpin vs free");
}

} // namespace

int test_tegra()
{
    HostBuffer buf(16 * kPage);
    {
        Gdrhook dev(O_RDWR | O_NONBLOCK);
        Provider tp;
        CHECK(dev.ok() && tp.ok());
        check_tegra_flavour(dev);
        check_alignment(dev, buf);
        check_peer_mapping(dev, buf);
        check_revocation(dev, tp, buf, false);
        check_revocation(dev, tp, buf, true);
    }
    check_close_with_pins(buf);
    race_unpin_vs_free(buf, race_iterations());
    check_no_leaks("tegra");
    CHECK(wait_counter(kTp, "tables_live", 0, 1000));
    return 0;
}

} // namespace vmtest
