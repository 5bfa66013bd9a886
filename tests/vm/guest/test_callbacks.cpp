// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_callbacks.cpp - the nv-p2p free callback against PIN in flight, and
// against the teardown (UNPIN, close, rmmod) of a pin it revoked.
//
// pin_vs_callback: the provider fires each new table's callback from
// another CPU as soon as get_pages has registered it, and waits for it
// before returning (fire_on_get_ms), so the callback runs while gdrhook is
// still reading the table it was given. A PIN must either succeed (and the
// revocation then arrives as one event for its handle) or fail with EAGAIN
// (with a peer, also with the provider's refusal to map a table being
// freed); the provider must see no misuse, no table may be left. Then the same with a second thread
// firing at random moments while the first pins and unpins.
//
// callback_teardown: the provider holds the client's callback inside
// free_page_table (hold_in_free_ms); UNPIN, close() and close-then-rmmod
// must not return while that callback is still running.
#include "common.hpp"

#include <atomic>
#include <thread>

namespace vmtest {
namespace {

constexpr const char *kTp = "/sys/kernel/debug/gdrhook_tp";

// One PIN whose callback fires at once; returns the PIN's errno and checks
// the outcome's invariants.
int pin_fired_at_once(const Gdrhook &dev, const HostBuffer &buf, bool peer, uint64_t tag)
{
    gdrhook_ioc_pin p = Gdrhook::nvp2p_req(buf.data(), 4 * kGpuPage, 0, tag);
    if (peer) {
        const PciAddr a = first_pci_device();
        p.flags |= GDRHOOK_PIN_PEER;
        p.peer_domain = a.domain;
        p.peer_bdf = a.bdf;
    }
    const uint64_t callbacks0 = tp_counter("callbacks");
    const int e = dev.pin(&p);
    // With a peer, the provider (like a driver) refuses to map a table
    // whose free has begun (EINVAL), and PIN passes that on.
    if (e != 0 && e != EAGAIN && !(peer && e == EINVAL))
        fail(__FILE__, __LINE__,
             std::string("PIN with the callback fired at once: want 0 or EAGAIN, got ") +
                 std::strerror(e) + " (" + std::to_string(e) + ")");
    // Either way the callback has run or will run exactly once.
    CHECK(wait_counter(kTp, "callbacks", callbacks0 + 1, 10000));
    if (e == 0) {
        std::vector<gdrhook_event> ev;
        CHECK_OK(wait_events(dev, 10000, &ev));
        CHECK(ev.size() == 1);
        CHECK(ev[0].type == GDRHOOK_EVENT_REVOKED_NVP2P && ev[0].handle == p.handle &&
              ev[0].user_tag == tag);
        gdrhook_ioc_query q;
        CHECK_OK(dev.query(p.handle, &q));
        CHECK(q.state == GDRHOOK_STATE_REVOKED);
        CHECK_OK(dev.unpin(p.handle));
    }
    CHECK(tp_counter("bad_calls") == 0);
    CHECK(wait_counter(kTp, "tables_live", 0, 10000));
    return e;
}

// A second thread fires the range at random moments while this one pins
// and unpins it: PIN answers 0 or EAGAIN, each event names a handle this
// thread holds, every UNPIN of a handle it got answers 0.
void random_fire_vs_pin(const HostBuffer &buf, uint64_t iters)
{
    Gdrhook dev(O_RDWR | O_NONBLOCK);
    Provider tp;
    CHECK(dev.ok() && tp.ok());
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> fired{0};
    std::thread firer([&] {
        while (!stop.load()) {
            uint32_t n = 0;
            CHECK_OK(tp.fire(buf.data(), kGpuPage, &n));
            fired += n;
        }
    });
    uint64_t ok = 0, again = 0, events = 0;
    std::vector<gdrhook_event> ev;
    for (uint64_t i = 0; i < iters; i++) {
        uint64_t h = 0;
        const int e = dev.pin_nvp2p(buf.data(), kGpuPage, &h, 0, i);
        CHECK(e == 0 || e == EAGAIN);
        if (e == 0) {
            ok++;
            CHECK_OK(dev.unpin(h));
        } else {
            again++;
        }
        CHECK_OK(dev.read_events(&ev));
        for (const auto &x : ev) {
            CHECK(x.type == GDRHOOK_EVENT_REVOKED_NVP2P && x.user_tag == i && x.handle == h);
            events++;
        }
    }
    stop = true;
    firer.join();
    std::printf("pin_vs_callback: random firing: %" PRIu64 " PINs: %" PRIu64 " pinned (%" PRIu64
                " then revoked while live), %" PRIu64
                " revoked while being pinned (EAGAIN); %" PRIu64 " callbacks\n",
                iters, ok, events, again, fired.load());
    CHECK(events <= ok);
}

uint64_t iterations()
{
    const char *s = std::getenv("GDRHOOKTEST_VM_RACE_ITERS");
    return s ? std::strtoull(s, nullptr, 10) : 100000;
}

} // namespace

int test_pin_vs_callback()
{
    HostBuffer buf(8 * kGpuPage);
    {
        Gdrhook dev(O_RDWR | O_NONBLOCK);
        CHECK(dev.ok());
        set_param("gdrhook_tp", "fire_on_get_ms", "300");
        for (bool peer : {false, true}) {
            int ok = 0, again = 0, refused = 0;
            for (int i = 0; i < 10; i++) {
                const int e = pin_fired_at_once(dev, buf, peer, i);
                (e == 0 ? ok : e == EAGAIN ? again : refused)++;
            }
            std::printf(
                "pin_vs_callback: callback fired during PIN%s: %d pinned then revoked, %d EAGAIN, "
                "%d mapping refused\n",
                peer ? " (with a peer mapping)" : "", ok, again, refused);
        }
        set_param("gdrhook_tp", "fire_on_get_ms", "0");
    }
    random_fire_vs_pin(buf, std::max<uint64_t>(1000, iterations() / 10));
    check_no_leaks("pin_vs_callback");
    return 0;
}

int test_callback_teardown()
{
    HostBuffer buf(kGpuPage);
    Provider tp;
    CHECK(tp.ok());
    set_param("gdrhook_tp", "hold_in_free_ms", "500");
    enum How { kUnpin, kClose, kCloseRmmod };
    for (How how : {kUnpin, kClose, kCloseRmmod}) {
        static const char *const names[] = {"UNPIN", "close", "close then rmmod"};
        Gdrhook dev(O_RDWR | O_NONBLOCK);
        CHECK(dev.ok());
        uint64_t h;
        CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h));
        std::thread firer([&] { CHECK_OK(tp.fire(buf.data(), kGpuPage)); });
        // The callback is now inside free_page_table, sleeping.
        CHECK(wait_counter(kTp, "frees_held", 1, 10000));
        Stopwatch sw;
        if (how == kUnpin)
            CHECK_OK(dev.unpin(h));
        else
            dev.close();
        const uint64_t held = tp_counter("frees_held");
        std::printf("callback_teardown: %s returned after %.3f s, callback %s\n", names[how],
                    sw.seconds(), held ? "STILL RUNNING" : "finished");
        if (held)
            fail(__FILE__, __LINE__,
                 std::string(names[how]) + " returned while the free callback ran");
        if (how == kCloseRmmod) {
            CHECK(unload_module("gdrhook") == 0);
            CHECK(load_module("gdrhook") == 0);
        }
        firer.join();
    }
    set_param("gdrhook_tp", "hold_in_free_ms", "0");
    check_no_leaks("callback_teardown");
    return 0;
}

} // namespace vmtest
