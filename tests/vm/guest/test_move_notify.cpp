// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_move_notify.cpp - dma-buf pins whose exporter moves the buffer
// (tests/kmods/exporter/gdrhook_te.c), the revocation path vgem never takes:
//  - an exporter without pin support: a move calls move_notify, the pin is
//    revoked, one REVOKED_DMABUF event names it (poll() signals it), QUERY
//    says REVOKED, GET_PAGES refuses it, UNPIN still answers 0 once and
//    gives the attachment back; a second move posts nothing;
//  - an exporter with pin support: gdrhook's pin (dynamic, and the static
//    fallback) keeps the exporter from moving the buffer at all; one that
//    takes the pinned buffer back regardless revokes a dynamic pin the
//    same way;
//  - move_notify racing PIN, UNPIN and close(): PIN answers 0 or EAGAIN,
//    every pin ends once (UNPIN 0 once, then ENOENT), a handle gets at most
//    one event and only if it was notified, and a pin still held after the
//    move is REVOKED exactly when its event came.
// Passing also means the exporter got back every attachment, mapping and
// pin (no bad_calls), and it unloads once its buffers are closed.
#include "common.hpp"

#include <atomic>
#include <memory>
#include <poll.h>
#include <thread>

namespace vmtest {
namespace {

constexpr uint64_t kBufSize = 16 * 4096;

bool readable(int fd)
{
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

void check_exporter_idle(const char *when)
{
    for (const char *name : {"attachments_live", "mappings_live", "pins_live", "bad_calls"}) {
        uint64_t v = te_counter(name);
        if (v != 0)
            fail(__FILE__, __LINE__,
                 std::string(when) + ": gdrhook_te " + name + " = " + std::to_string(v) +
                     ", want 0");
    }
}

size_t events_for(const std::vector<gdrhook_event> &ev, uint64_t handle)
{
    size_t n = 0;
    for (const auto &e : ev)
        if (e.handle == handle)
            n++;
    return n;
}

// Without pin support the exporter moves whenever it likes; move_notify is
// all gdrhook gets, and it must turn it into a revocation.
void plain_buffer_revokes(const Exporter &te, PciAddr peer)
{
    Gdrhook dev(O_RDWR | O_NONBLOCK | O_CLOEXEC);
    CHECK(dev.ok());
    constexpr int kBufs = 3;
    Fd bufs[kBufs];
    uint64_t h[kBufs];
    for (int i = 0; i < kBufs; i++) {
        CHECK_OK(te.create(kBufSize, 0, &bufs[i]));
        CHECK_OK(dev.pin_dmabuf(bufs[i].get(), 0, kBufSize, peer, &h[i], 100 + i));
    }
    CHECK(te_counter("attachments_live") == kBufs);
    CHECK(!readable(dev.fd()));

    const uint64_t revocations0 = gdr_counter("revocations");
    uint32_t notified = 0;
    CHECK_OK(te.move(bufs[0].get(), &notified));
    CHECK(notified == 1);
    CHECK(readable(dev.fd()));
    std::vector<gdrhook_event> ev;
    CHECK_OK(wait_events(dev, 5000, &ev));
    CHECK(ev.size() == 1);
    CHECK(ev[0].type == GDRHOOK_EVENT_REVOKED_DMABUF);
    CHECK(ev[0].handle == h[0]);
    CHECK(ev[0].user_tag == 100);
    CHECK(ev[0].addr == 0 && ev[0].length == kBufSize);
    CHECK(gdr_counter("revocations") == revocations0 + 1);

    gdrhook_ioc_query q;
    CHECK_OK(dev.query(h[0], &q));
    CHECK(q.state == GDRHOOK_STATE_REVOKED);
    CHECK_OK(dev.query(h[1], &q));
    CHECK(q.state == GDRHOOK_STATE_VALID);
    std::vector<uint64_t> addrs(16);
    CHECK_ERR(dev.get_pages(h[0], 0, &addrs), ENODEV);
    addrs.resize(16);
    CHECK_OK(dev.get_pages(h[1], 0, &addrs));

    // Moved again: still notified (the attachment is ours until UNPIN),
    // but it is one revocation, already reported.
    CHECK_OK(te.move(bufs[0].get(), &notified));
    CHECK(notified == 1);
    CHECK_OK(dev.read_events(&ev));
    CHECK(ev.empty());
    CHECK(gdr_counter("revocations") == revocations0 + 1);

    // A revoked pin is still the caller's to UNPIN, once.
    CHECK_OK(dev.unpin(h[0]));
    CHECK_ERR(dev.unpin(h[0]), ENOENT);
    CHECK(te_counter("attachments_live") == kBufs - 1);
    CHECK_OK(te.move(bufs[0].get(), &notified));
    CHECK(notified == 0);

    // Two pins on parts of one buffer: one move revokes both.
    uint64_t a = 0, b = 0;
    CHECK_OK(dev.pin_dmabuf(bufs[0].get(), 0, 4096, peer, &a, 200));
    CHECK_OK(dev.pin_dmabuf(bufs[0].get(), 8192, 8192, peer, &b, 201));
    CHECK_OK(te.move(bufs[0].get(), &notified));
    CHECK(notified == 2);
    CHECK_OK(wait_events(dev, 5000, &ev));
    CHECK(ev.size() == 2);
    CHECK(events_for(ev, a) == 1 && events_for(ev, b) == 1);
    for (const auto &e : ev) {
        CHECK(e.type == GDRHOOK_EVENT_REVOKED_DMABUF);
        CHECK(e.handle == a ? e.addr == 0 && e.length == 4096 && e.user_tag == 200
                            : e.addr == 8192 && e.length == 8192 && e.user_tag == 201);
    }
    CHECK_OK(dev.unpin(a));

    // A new pin after the move maps the buffer where it is now.
    uint64_t c = 0;
    CHECK_OK(dev.pin_dmabuf(bufs[0].get(), 0, kBufSize, peer, &c, 202));
    CHECK_OK(dev.query(c, &q));
    CHECK(q.state == GDRHOOK_STATE_VALID);

    // close() with live and revoked pins: everything goes back.
    CHECK_OK(te.move(bufs[2].get(), &notified));
    CHECK(notified == 1);
    dev.close();
    check_exporter_idle("plain: after close");
    check_no_leaks("plain: after close");
}

// With pin support, gdrhook's pin keeps the exporter from moving the
// buffer: no move, no notification, the pin stays valid.
void pinnable_buffer_stays(const Exporter &te, PciAddr peer, bool dynamic)
{
    set_param("gdrhook", "dmabuf_dynamic", dynamic ? "1" : "0");
    Gdrhook dev(O_RDWR | O_NONBLOCK | O_CLOEXEC);
    CHECK(dev.ok());
    Fd buf;
    CHECK_OK(te.create(kBufSize, GDRHOOK_TE_PINNABLE, &buf));
    uint32_t notified = 0;
    CHECK_OK(te.move(buf.get(), &notified)); // nobody attached: it moves
    CHECK(notified == 0);

    uint64_t h = 0;
    CHECK_OK(dev.pin_dmabuf(buf.get(), 0, kBufSize, peer, &h, 300));
    CHECK(te_counter("pins_live") >= 1);
    const uint64_t refused0 = te_counter("moves_refused");
    CHECK_ERR(te.move(buf.get()), EBUSY);
    CHECK(te_counter("moves_refused") == refused0 + 1);
    std::vector<gdrhook_event> ev;
    CHECK_ERR(wait_events(dev, 200, &ev), ETIMEDOUT);
    gdrhook_ioc_query q;
    CHECK_OK(dev.query(h, &q));
    CHECK(q.state == GDRHOOK_STATE_VALID);

    // Taken back although pinned (its device going away): a dynamic pin
    // is revoked like any other, and UNPIN still unpins it, once.
    CHECK_OK(te.move(buf.get(), &notified, GDRHOOK_TE_MOVE_EVEN_IF_PINNED));
    if (dynamic) {
        CHECK(notified == 1);
        CHECK_OK(wait_events(dev, 5000, &ev));
        CHECK(ev.size() == 1 && ev[0].handle == h && ev[0].type == GDRHOOK_EVENT_REVOKED_DMABUF);
        CHECK_OK(dev.query(h, &q));
        CHECK(q.state == GDRHOOK_STATE_REVOKED);
    } else {
        CHECK(notified == 0); // a static attachment has no move_notify
    }

    CHECK_OK(dev.unpin(h));
    CHECK_ERR(dev.unpin(h), ENOENT);
    CHECK(te_counter("pins_live") == 0);
    CHECK_OK(te.move(buf.get(), &notified));
    CHECK(notified == 0);
    set_param("gdrhook", "dmabuf_dynamic", "1");
    dev.close();
    check_exporter_idle(dynamic ? "pinnable: after close" : "pinnable, static: after close");
}

// Up to max_ns (default 40 us) of busy waiting, so each side lands
// before, inside or after the other's call.
class Jitter {
public:
    explicit Jitter(uint64_t seed, uint64_t max_ns = 40000) : s_(seed), max_ns_(max_ns) {}
    void spin()
    {
        s_ = s_ * 6364136223846793005ULL + 1442695040888963407ULL;
        const auto ns = static_cast<int64_t>((s_ >> 33) % max_ns_);
        const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
        while (std::chrono::steady_clock::now() < until) {
        }
    }

private:
    uint64_t s_;
    uint64_t max_ns_;
};

uint64_t race_iterations()
{
    const char *s = std::getenv("GDRHOOKTEST_VM_RACE_ITERS");
    const uint64_t n = s ? std::strtoull(s, nullptr, 10) : 100000;
    // Every iteration attaches, maps and moves a buffer: a tenth of the
    // nv-p2p race's count takes about as long.
    return std::max<uint64_t>(n / 10, 100);
}

struct RaceTally {
    uint64_t revoked = 0;   // pins the move revoked (event seen)
    uint64_t unrevoked = 0; // pins the move missed (UNPIN or close first)
    uint64_t eagain = 0;    // PINs the move revoked before they returned
};

// The mover thread: moves buf once per round, when the owner says so.
class Mover {
public:
    Mover(const Exporter &te, int buf, uint64_t max_ns)
        : te_(te), buf_(buf), max_ns_(max_ns), t_([this] { run(); })
    {}
    ~Mover()
    {
        stop_ = true;
        go_.wait();
        t_.join();
    }
    // Starts one move; it lands after a random delay.
    void go() { go_.wait(); }
    // Waits for the move to be done; the attachments it notified.
    uint32_t done()
    {
        done_.wait();
        return notified_;
    }

private:
    void run()
    {
        Jitter j(0x9e3779b97f4a7c15ULL, max_ns_);
        for (;;) {
            go_.wait();
            if (stop_)
                return;
            j.spin();
            notified_ = 0;
            CHECK_OK(te_.move(buf_, &notified_));
            done_.wait();
        }
    }
    const Exporter &te_;
    int buf_;
    uint64_t max_ns_;
    std::atomic<bool> stop_{false};
    uint32_t notified_ = 0;
    Barrier go_{2};
    Barrier done_{2};
    std::thread t_;
};

// What a race needs: gdrhook's file, a plain buffer, its mover.
struct Rig {
    Rig(const Exporter &te, uint64_t seed, uint64_t mover_max_ns = 40000) : jitter(seed)
    {
        CHECK(dev.ok());
        CHECK_OK(te.create(kBufSize, 0, &buf));
        mover = std::make_unique<Mover>(te, buf.get(), mover_max_ns);
    }
    ~Rig() { mover.reset(); } // before the buffer it moves is closed
    Gdrhook dev{O_RDWR | O_NONBLOCK | O_CLOEXEC};
    Fd buf;
    std::unique_ptr<Mover> mover;
    Jitter jitter;
    std::vector<gdrhook_event> ev;
};

// move_notify against UNPIN: the pin ends once, by UNPIN, with at most one
// event, and an event only when the move notified it.
void race_unpin(const Exporter &te, PciAddr peer, uint64_t iters, RaceTally *t)
{
    Rig r(te, 1);
    auto &ev = r.ev;
    for (uint64_t i = 0; i < iters; i++) {
        uint64_t h = 0;
        CHECK_OK(r.dev.pin_dmabuf(r.buf.get(), 0, kBufSize, peer, &h, i));
        r.mover->go();
        r.jitter.spin();
        CHECK_OK(r.dev.unpin(h));
        const uint32_t notified = r.mover->done();
        CHECK_ERR(r.dev.unpin(h), ENOENT);
        CHECK_OK(r.dev.read_events(&ev));
        CHECK(ev.size() <= 1 && ev.size() <= notified);
        CHECK(ev.size() == events_for(ev, h));
        (ev.empty() ? t->unrevoked : t->revoked)++;
    }
    CHECK(te_counter("attachments_live") == 0);
}

// move_notify against PIN: PIN answers 0 or EAGAIN, and a pin it returns
// is REVOKED after the move exactly when its one event came.
void race_pin(const Exporter &te, PciAddr peer, uint64_t iters, RaceTally *t)
{
    // The exporter sleeps in map, inside gdrhook's PIN, after the
    // attachment is visible to a move: some moves land while PIN is still
    // setting up, which PIN must answer with EAGAIN.
    set_param("gdrhook_te", "map_delay_us", "100");
    // The mover waits up to 300 us, about as long as a PIN with that sleep.
    Rig r(te, 2, 300000);
    auto &ev = r.ev;
    for (uint64_t i = 0; i < iters; i++) {
        uint64_t h = 0;
        r.mover->go();
        r.jitter.spin();
        const int e = r.dev.pin_dmabuf(r.buf.get(), 0, kBufSize, peer, &h, i);
        r.mover->done();
        CHECK_OK(r.dev.read_events(&ev));
        if (e == EAGAIN) {
            CHECK(ev.empty());
            t->eagain++;
            continue;
        }
        CHECK_OK(e);
        gdrhook_ioc_query q;
        CHECK_OK(r.dev.query(h, &q));
        CHECK(ev.size() <= 1 && ev.size() == events_for(ev, h));
        CHECK((q.state == GDRHOOK_STATE_REVOKED) == (ev.size() == 1));
        (ev.empty() ? t->unrevoked : t->revoked)++;
        CHECK_OK(r.dev.unpin(h));
        CHECK_ERR(r.dev.unpin(h), ENOENT);
    }
    set_param("gdrhook_te", "map_delay_us", "0");
    CHECK(te_counter("attachments_live") == 0);
}

// move_notify against close(): whichever wins, every attachment goes back.
void race_close(const Exporter &te, PciAddr peer, uint64_t iters)
{
    Rig r(te, 3);
    r.dev.close(); // each round opens its own
    for (uint64_t i = 0; i < iters; i++) {
        Gdrhook dev(O_RDWR | O_NONBLOCK | O_CLOEXEC);
        CHECK(dev.ok());
        uint64_t h = 0;
        for (int k = 0; k < 4; k++)
            CHECK_OK(dev.pin_dmabuf(r.buf.get(), k * 4096, 4096, peer, &h, k));
        r.mover->go();
        r.jitter.spin();
        dev.close();
        r.mover->done();
        CHECK(te_counter("attachments_live") == 0);
    }
}

} // namespace

int test_move_notify()
{
    Exporter te;
    CHECK(te.ok());
    const PciAddr peer = first_pci_device();
    set_param("gdrhook_te", "map_delay_us", "0");
    check_exporter_idle("start");

    plain_buffer_revokes(te, peer);
    pinnable_buffer_stays(te, peer, true);
    pinnable_buffer_stays(te, peer, false);
    CHECK(te_counter("buffers_live") == 0);

    const uint64_t iters = race_iterations();
    RaceTally unpin, pin;
    race_unpin(te, peer, iters, &unpin);
    race_pin(te, peer, iters, &pin);
    race_close(te, peer, iters / 4);
    check_exporter_idle("after the races");
    check_no_leaks("after the races");
    CHECK(te_counter("buffers_live") == 0);

    // Nothing holds the exporter but our fd: it unloads, and comes back.
    te.close();
    CHECK(unload_module("gdrhook_te") == 0);
    CHECK(load_module("gdrhook_te") == 0);
    std::printf("move_notify: %" PRIu64 " iterations per race; vs UNPIN %" PRIu64
                " revoked, %" PRIu64 " not; vs PIN %" PRIu64 " revoked, %" PRIu64 " not, %" PRIu64
                " EAGAIN\n",
                iters, unpin.revoked, unpin.unrevoked, pin.revoked, pin.unrevoked, pin.eagain);
    return 0;
}

} // namespace vmtest
