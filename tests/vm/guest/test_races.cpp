// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_races.cpp - "What must be shown" 3: the NVIDIA free callback racing
// an explicit unpin of the same pin, and racing close() of the file that
// holds the pins; 100,000 iterations of each race in all, half with a
// provider whose put_pages waits for a running callback and half with one
// that does not (so callbacks also arrive after the pin is gone), each half
// run by one pair of threads and then by two pairs at once.
// The provider's race_delay_us puts random delays inside put_pages and
// before each callback, so the callback lands before, during and after
// the unpin. Passing means: no oops or poison report in the log, every
// unpin answered 0, one event per revocation, and every counter back to 0.
#include "common.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace vmtest {
namespace {

struct Outcomes {
    std::atomic<uint64_t> fired{0};  // the callback ran (won or not)
    std::atomic<uint64_t> events{0}; // the callback revoked a live pin
};

void spin_for(int64_t ns)
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
    while (std::chrono::steady_clock::now() < until) {
    }
}

// Lines the two sides of a pair up so that they collide. Each side waits a
// little before acting: up to 60 random microseconds, plus a bias that
// moves after every round towards the point where the callback finds the
// table still live half of the time. Around that point, spread by the
// random part, the callback lands before, inside and after the unpin.
class Aim {
public:
    explicit Aim(uint64_t seed) : s_(seed) {}
    void before_fire() { spin_for(std::max<int64_t>(0, bias_.load()) + random_ns()); }
    void before_unpin() { spin_for(std::max<int64_t>(0, -bias_.load()) + random_ns()); }
    // The firer reports whether it found the pin(s) still live.
    void fired(bool found)
    {
        const int64_t b = bias_.load() + (found ? kStep : -kStep);
        bias_.store(std::clamp<int64_t>(b, -kLimit, kLimit));
    }

private:
    static constexpr int64_t kStep = 250;      // ns
    static constexpr int64_t kLimit = 2000000; // ns
    int64_t random_ns()
    {
        std::lock_guard<std::mutex> l(m_);
        s_ = s_ * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<int64_t>((s_ >> 33) % 60000);
    }
    std::atomic<int64_t> bias_{0};
    std::mutex m_;
    uint64_t s_;
};

uint64_t iterations()
{
    const char *s = std::getenv("GDRHOOKTEST_VM_RACE_ITERS");
    return s ? std::strtoull(s, nullptr, 10) : 100000;
}

// One pair: the owner pins, then unpins while the other thread fires.
void race_unpin_pair(const char *range, uint64_t iters, Outcomes *out)
{
    Provider tp;
    Gdrhook dev(O_RDWR | O_NONBLOCK);
    CHECK(tp.ok() && dev.ok());
    Barrier go(2), done(2);
    std::atomic<uint64_t> fired{0};

    Aim aim(reinterpret_cast<uintptr_t>(range));
    std::thread firer([&] {
        for (uint64_t i = 0; i < iters; i++) {
            go.wait();
            aim.before_fire();
            uint32_t n = 0;
            CHECK_OK(tp.fire(range, kGpuPage, &n));
            CHECK(n <= 1);
            aim.fired(n != 0);
            fired += n;
            done.wait();
        }
    });
    std::vector<gdrhook_event> ev;
    uint64_t events = 0;
    for (uint64_t i = 0; i < iters; i++) {
        uint64_t h;
        CHECK_OK(dev.pin_nvp2p(range, kGpuPage, &h, 0, i));
        go.wait();
        aim.before_unpin();
        // Revoked or not, the handle is ours until we unpin it.
        CHECK_OK(dev.unpin(h));
        done.wait();
        CHECK_OK(dev.read_events(&ev));
        for (const auto &e : ev) {
            CHECK(e.type == GDRHOOK_EVENT_REVOKED_NVP2P && e.handle == h && e.user_tag == i);
            events++;
        }
    }
    firer.join();
    out->fired += fired;
    out->events += events;
}

constexpr int kPinsPerClose = 3;

// One pair: the owner pins a few handles, then closes the file while the
// other thread fires.
void race_close_pair(const char *range, uint64_t iters, Outcomes *out)
{
    Provider tp;
    CHECK(tp.ok());
    Barrier go(2), done(2);
    std::atomic<uint64_t> fired{0};

    Aim aim(reinterpret_cast<uintptr_t>(range));
    std::thread firer([&] {
        for (uint64_t i = 0; i < iters; i++) {
            go.wait();
            aim.before_fire();
            uint32_t n = 0;
            CHECK_OK(tp.fire(range, kGpuPage, &n));
            // Aim at the start of the close: all its pins still live
            // half of the time, so the rest land inside the close.
            aim.fired(n == kPinsPerClose);
            fired += n;
            done.wait();
        }
    });
    for (uint64_t i = 0; i < iters; i++) {
        Gdrhook dev;
        CHECK(dev.ok());
        for (int k = 0; k < kPinsPerClose; k++) {
            uint64_t h;
            CHECK_OK(dev.pin_nvp2p(range, kGpuPage, &h));
        }
        go.wait();
        aim.before_unpin();
        dev.close();
        done.wait();
    }
    firer.join();
    out->fired += fired;
}

void run_pairs(const char *what, void (*pair)(const char *, uint64_t, Outcomes *),
               const HostBuffer &buf, unsigned pairs, uint64_t total)
{
    const uint64_t rev0 = gdr_counter("revocations");
    const uint64_t cb0 = gdr_counter("callbacks");
    const uint64_t late0 = gdr_counter("late_callbacks");
    Outcomes out;
    Stopwatch sw;
    std::vector<std::thread> threads;
    for (unsigned p = 0; p < pairs; p++)
        threads.emplace_back(pair, buf.data() + p * kGpuPage, total / pairs, &out);
    for (auto &t : threads)
        t.join();
    const uint64_t revoked = gdr_counter("revocations") - rev0;
    const uint64_t callbacks = gdr_counter("callbacks") - cb0;
    const uint64_t late = gdr_counter("late_callbacks") - late0;
    const uint64_t pins = total * (pair == race_unpin_pair ? 1 : kPinsPerClose);
    std::printf("races: %s: %" PRIu64 " iterations, %u thread pairs, %.1f s; of %" PRIu64
                " pins, the callback "
                "revoked %" PRIu64 " while live, found %" PRIu64
                " being unpinned, came after %" PRIu64 " were gone, and never came for %" PRIu64
                "\n",
                what, total, pairs, sw.seconds(), pins, revoked, callbacks - revoked - late, late,
                pins - callbacks);
    CHECK(callbacks == out.fired.load());
    if (pair == race_unpin_pair)
        CHECK(out.events.load() == revoked); // exactly one event per revocation
    check_no_leaks(what);
}

} // namespace

int test_races()
{
    HostBuffer buf(8 * kGpuPage);
    const uint64_t iters = iterations();
    // With two vCPUs, one pair of threads collides best (a second pair
    // mostly runs on the same CPU as its partner, and the two sides then
    // take turns); each race also runs with two pairs (four threads), to
    // crowd the global id table and the provider from more threads.
    set_param("gdrhook_tp", "race_delay_us", "50");
    // Each race gets `iters` iterations in all, split between a provider
    // whose put_pages waits for a running callback and one that does not
    // (so callbacks also arrive after the pin is gone).
    run_pairs("callback vs unpin", race_unpin_pair, buf, 1, iters / 4);
    run_pairs("callback vs unpin, 2 pairs", race_unpin_pair, buf, 2, iters / 4);
    run_pairs("callback vs close", race_close_pair, buf, 1, iters / 4);
    run_pairs("callback vs close, 2 pairs", race_close_pair, buf, 2, iters / 4);
    set_param("gdrhook_tp", "put_waits_for_callback", "0");
    run_pairs("late callback vs unpin", race_unpin_pair, buf, 1, iters / 4);
    run_pairs("late callback vs unpin, 2 pairs", race_unpin_pair, buf, 2, iters / 4);
    run_pairs("late callback vs close", race_close_pair, buf, 1, iters / 4);
    run_pairs("late callback vs close, 2 pairs", race_close_pair, buf, 2, iters / 4);
    set_param("gdrhook_tp", "put_waits_for_callback", "1");
    set_param("gdrhook_tp", "race_delay_us", "0");
    std::printf("races: %" PRIu64 " iterations of callback vs unpin and %" PRIu64
                " of callback vs close, up to 4 threads, counters back to 0\n",
                iters / 4 * 4, iters / 4 * 4);
    return 0;
}

} // namespace vmtest
