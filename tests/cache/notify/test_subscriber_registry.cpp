// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The registry both sequences of subscribers share
// (cache/notify/subscriber_registry.h), over a subscriber of the test's
// own: a walk calls a subscriber with its whole entry or not at all while
// other threads subscribe it and start it listening; two subscriptions at
// once get two places; a place nobody subscribed never listens.
//
// Racy outcomes are checked as invariants, never as counts. The orderings
// themselves are ThreadSanitizer's to check: tests/unit/meson.build builds
// this program with -fsanitize=thread wherever the compiler has it, so a
// walk that reads an entry its writer has not published is reported as a
// race in every build, not only in build-tsan.
#include "cache/notify/subscriber_registry.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <thread>
#include <vector>

using namespace gdrhook;

namespace {

// A subscriber whose fields all say which place it was written for: an
// entry half written has fields that disagree.
struct Probe {
    int place = -1;
    uint64_t seal = 0;
    const char *name = nullptr;
    void (*heard)(int place) = nullptr;
};

constexpr const char *names[] = {"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"};

uint64_t seal_of(int place, int writer = 0)
{
    return uint64_t{0x9e3779b97f4a7c15} * (place + 1) ^ uint64_t(writer) << 32;
}

std::atomic<unsigned> heard_bits{0};

void record_heard(int place)
{
    heard_bits.fetch_or(1u << place, std::memory_order_relaxed);
}

Probe probe_for(int place, int writer = 0)
{
    Probe p;
    p.place = place;
    p.seal = seal_of(place, writer);
    p.name = names[place];
    p.heard = record_heard;
    return p;
}

bool whole(const Probe &p, int place)
{
    return p.place == place && p.seal == seal_of(place) && p.name == names[place] &&
           p.heard == record_heard;
}

using WalkedRegistry = SubscriberRegistry<Probe, &HotLine::free_listeners>;
using CrowdedRegistry = SubscriberRegistry<Probe, &HotLine::alloc_listeners>;

} // namespace

TEST_CASE("a subscriber started while another thread walks is heard whole or not at all")
{
    // Three threads, as the shim has them: the runtime subscribes, another
    // thread starts the subscriber listening (UCX once it found libucm,
    // the cache once first needed), a third frees and walks meanwhile. No
    // hand-off between them but the registry's own: the starter learns of
    // a new place through a relaxed counter, which orders nothing.
    for (int round = 0; round < 20; ++round) {
        static WalkedRegistry registries[20];
        WalkedRegistry &registry = registries[round];
        hot_line.free_listeners.store(0);
        heard_bits.store(0);
        constexpr int count = WalkedRegistry::capacity;
        constexpr unsigned everyone = (1u << count) - 1;
        std::atomic<int> subscribed{0};
        std::atomic<long> torn{0}, out_of_order{0}, forgotten{0};

        std::thread walker([&] {
            unsigned before = 0;
            for (long walk = 0; walk < 50'000'000 && before != everyone; ++walk) {
                unsigned now = 0;
                int last = -1;
                registry.each_listening([&](const Probe &p, int place) {
                    if (!whole(p, place)) {
                        torn.fetch_add(1, std::memory_order_relaxed);
                        return;
                    }
                    p.heard(place);
                    out_of_order.fetch_add(place <= last, std::memory_order_relaxed);
                    last = place;
                    now |= 1u << place;
                });
                // Nobody stops listening: once heard, heard by every walk.
                forgotten.fetch_add((before & ~now) != 0, std::memory_order_relaxed);
                before = now;
            }
        });
        std::thread starter([&] {
            for (int place = 0; place < count; ++place) {
                while (subscribed.load(std::memory_order_relaxed) <= place)
                    std::this_thread::yield();
                registry.start_listening(place);
            }
        });
        for (int place = 0; place < count; ++place) {
            const int got = registry.subscribe(probe_for(place));
            CHECK(got == place);
            subscribed.store(place + 1, std::memory_order_relaxed);
        }
        starter.join();
        walker.join();

        CHECK(torn.load() == 0);
        CHECK(out_of_order.load() == 0);
        CHECK(forgotten.load() == 0);
        CHECK(heard_bits.load() == everyone);
    }
    hot_line.free_listeners.store(0);
}

TEST_CASE("subscriptions made at once get a place each, and the ninth none")
{
    // Two threads, one a core, that start each round together and
    // subscribe six times each, twelve for eight places, over and over
    // in fresh registries.
    constexpr int threads = 2;
    constexpr int each = 6;
    constexpr int rounds = 2000;
    static CrowdedRegistry registries[rounds];
    static std::array<std::array<std::array<int, each>, threads>, rounds> places;
    std::atomic<int> arrived{0};
    std::vector<std::thread> subscribers;
    for (int t = 0; t < threads; ++t)
        subscribers.emplace_back([&, t] {
            for (int round = 0; round < rounds; ++round) {
                arrived.fetch_add(1);
                while (arrived.load() < (round + 1) * threads) {
                }
                for (int i = 0; i < each; ++i)
                    // The entry says who wrote it; its place is known only
                    // once taken, so the test checks the writer, below.
                    places[round][t][i] =
                        registries[round].subscribe(probe_for(0, t * each + i + 1));
            }
        });
    for (std::thread &s : subscribers)
        s.join();

    long shared = 0, not_theirs = 0, wrong_count = 0;
    for (int round = 0; round < rounds; ++round) {
        std::vector<int> taken;
        for (int t = 0; t < threads; ++t)
            for (int i = 0; i < each; ++i)
                if (const int place = places[round][t][i]; place >= 0) {
                    taken.push_back(place);
                    // The entry at its place is the one this call wrote.
                    const Probe *p = registries[round].at(place);
                    not_theirs += !p || p->seal != seal_of(0, t * each + i + 1);
                }
        std::sort(taken.begin(), taken.end());
        shared += std::adjacent_find(taken.begin(), taken.end()) != taken.end();
        wrong_count += taken.size() != CrowdedRegistry::capacity;
    }
    CHECK(shared == 0);
    CHECK(not_theirs == 0);
    CHECK(wrong_count == 0);
}

TEST_CASE("a place nobody subscribed never listens")
{
    static WalkedRegistry registry;
    hot_line.free_listeners.store(0);
    int walked = 0;
    for (int place : {-1, 0, 3, WalkedRegistry::capacity})
        registry.start_listening(place);
    CHECK(hot_line.free_listeners.load() == 0);
    CHECK(registry.at(0) == nullptr);
    registry.each_listening([&](const Probe &, int) { ++walked; });
    CHECK(walked == 0);

    // Subscribed, it hears nothing until it starts listening.
    REQUIRE(registry.subscribe(probe_for(0)) == 0);
    CHECK(hot_line.free_listeners.load() == 0);
    registry.each_subscribed([&](const Probe &p, int place) { CHECK(whole(p, place)); });
    registry.start_listening(0);
    CHECK(hot_line.free_listeners.load() == 1);
    registry.each_listening([&](const Probe &p, int place) {
        CHECK(whole(p, place));
        ++walked;
    });
    CHECK(walked == 1);
    hot_line.free_listeners.store(0);
}
