// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The free sequence's subscribers (cache/notify/free_subscribers.h): the
// runtime subscribes the registration cache first, the pointer table second
// and UCX third (and to
// allocations, notify/alloc_subscribers.h, UCX first); every
// walk calls the listeners in the order they subscribed; and a third
// subscriber hears of every kind of free (a device free, a pool's release,
// a context teardown, a graph's release) before the real call, and after
// it with the clock it read as soon as the real call returned.
//
// Its own program: it starts the runtime in this process (no hook; the
// recorder is called as the hook would call it).
#include "cache/core/runtime.h"
#include "cache/notify/alloc_subscribers.h"
#include "cache/notify/free_subscribers.h"
#include "cache/record/graph_release.h"
#include "cache/record/recorder.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

using namespace gdrhook;

namespace {

constexpr uint64_t test_context = 0xc0;

uint64_t current_context()
{
    return test_context;
}
int32_t current_device()
{
    return 0;
}

// What the test's subscribers heard, in the order they heard it.
std::vector<std::string> heard;

std::string said(const char *who, const char *step, MemoryKind kind, uint64_t addr, uint64_t size)
{
    return std::string(who) + " " + step + " " + to_string(kind) + " " + std::to_string(addr) +
           "+" + std::to_string(size);
}

template <int Who> const char *name_of()
{
    static const char *const names[] = {"first", "second", "third"};
    return names[Who];
}

template <int Who> FreeSubscriber recording_subscriber()
{
    FreeSubscriber s{};
    s.name = name_of<Who>();
    s.before_free = [](MemoryKind kind, uint64_t addr, uint64_t size) {
        heard.push_back(said(name_of<Who>(), "before", kind, addr, size));
    };
    s.before_context_teardown = [](MemoryKind kind, uint64_t addr, uint64_t size) {
        heard.push_back(said(name_of<Who>(), "teardown", kind, addr, size));
    };
    s.clock_after_free = [] { return uint64_t{100 + Who}; };
    s.after_free = [](MemoryKind kind, uint64_t addr, uint64_t size, uint64_t clock) {
        heard.push_back(said(name_of<Who>(), "after", kind, addr, size) + " clock " +
                        std::to_string(clock));
    };
    s.pool_released = [] { heard.push_back(std::string(name_of<Who>()) + " pool"); };
    return s;
}

// The runtime, started once for this program, with its own log.
void start_runtime_here()
{
    static const bool started = [] {
        setenv("GDRHOOK_EVENTS", "free_subscribers_test.jsonl", 1);
        setenv("GDRHOOK_UCX", "off", 1);
        static DriverQueries queries;
        queries.current_context = current_context;
        queries.current_device = current_device;
        return start_runtime(queries);
    }();
    REQUIRE(started);
}

} // namespace

TEST_CASE("the runtime subscribes the registration cache, then the pointer table, before UCX")
{
    start_runtime_here();
    const FreeSubscriber *first = free_subscriber(0);
    const FreeSubscriber *second = free_subscriber(1);
    const FreeSubscriber *third = free_subscriber(2);
    REQUIRE(first);
    REQUIRE(second);
    REQUIRE(third);
    CHECK(std::string(first->name) == "registration cache");
    CHECK(std::string(second->name) == "pointer-answers");
    CHECK(std::string(third->name) == "UCX");
    CHECK(runtime().cache_subscription == 0);
}

TEST_CASE("the runtime subscribes UCX before pin-on-alloc to allocations")
{
    // The reverse of a free's order (notify/alloc_subscribers.h says why);
    // what a library meets is held by the ucx suite ("UCX hears of an
    // allocation before gdrhook pins it...").
    start_runtime_here();
    const AllocSubscriber *first = alloc_subscriber(0);
    const AllocSubscriber *second = alloc_subscriber(1);
    REQUIRE(first);
    REQUIRE(second);
    CHECK(std::string(first->name) == "UCX");
    CHECK(std::string(second->name) == "pin-on-alloc");
    CHECK(std::string(alloc_subscriber(2)->name) == "pointer-answers");
    CHECK(alloc_subscriber(3) == nullptr);
}

TEST_CASE("a third subscriber hears of every kind of free before and after the real call")
{
    start_runtime_here();
    // Neither the cache (never made here) nor UCX (off) listens.
    REQUIRE(hot_line.free_listeners.load() == 0);
    static const FreeSubscription third = subscribe_to_frees(recording_subscriber<2>());
    REQUIRE(third == 3); // after the cache, the pointer table and UCX
    start_listening(third);
    heard.clear();

    SECTION("a device free")
    {
        record_alloc("cuMemAlloc_v2", Via::symbol, MemoryKind::device, 0x10000, 0x1000, 0);
        FreeTicket ticket = begin_free("cuMemFree_v2", Via::symbol, MemoryKind::device, 0x10000, 0);
        CHECK(heard == std::vector<std::string>{"third before device 65536+4096"});
        end_free(ticket, 0);
        CHECK(heard == std::vector<std::string>{"third before device 65536+4096",
                                                "third after device 65536+4096 clock 102"});
    }
    SECTION("a refused free is not over")
    {
        record_alloc("cuMemAlloc_v2", Via::symbol, MemoryKind::device, 0x20000, 0x1000, 0);
        FreeTicket ticket = begin_free("cuMemFree_v2", Via::symbol, MemoryKind::device, 0x20000, 0);
        end_free(ticket, 1);
        CHECK(heard == std::vector<std::string>{"third before device 131072+4096"});
        FreeTicket again = begin_free("cuMemFree_v2", Via::symbol, MemoryKind::device, 0x20000, 0);
        end_free(again, 0);
    }
    SECTION("a pool's release")
    {
        before_pool_release();
        CHECK(heard == std::vector<std::string>{"third pool"});
    }
    SECTION("a context teardown")
    {
        record_alloc("cuMemAlloc_v2", Via::symbol, MemoryKind::device, 0x30000, 0x2000, 0);
        TeardownTicket ticket =
            begin_context_teardown("cuCtxDestroy_v2", Via::symbol, test_context, 0);
        CHECK(heard == std::vector<std::string>{"third teardown device 196608+8192"});
        end_context_teardown(ticket, 0);
        CHECK(heard == std::vector<std::string>{"third teardown device 196608+8192",
                                                "third after device 196608+8192 clock 102"});
    }
    SECTION("a graph's release")
    {
        GraphReleaseTicket ticket = begin_graph_release(
            "cuGraphExecDestroy", Via::symbol, 0x77, 0,
            {GraphRange{0x40000, 0x100, 0}, GraphRange{0x50000, 0x200, 0}}, true);
        CHECK(heard == std::vector<std::string>{"third before graph 262144+256",
                                                "third before graph 327680+512"});
        end_graph_release(ticket, 0);
        CHECK(heard.size() == 4);
        CHECK(heard[2] == "third after graph 262144+256 clock 102");
        CHECK(heard[3] == "third after graph 327680+512 clock 102");
    }
    // Nobody listens to the next test's frees but whom it subscribes.
    hot_line.free_listeners.store(0);
}

TEST_CASE("every step calls the listening subscribers in the order they subscribed")
{
    start_runtime_here();
    const FreeSubscription a = subscribe_to_frees(recording_subscriber<0>());
    const FreeSubscription b = subscribe_to_frees(recording_subscriber<1>());
    REQUIRE(a >= 0);
    REQUIRE(b == a + 1);
    start_listening(b); // the order is the subscriptions', not the listening's
    start_listening(a);
    heard.clear();

    tell_before_free(MemoryKind::pool, 0x1000, 0x10);
    tell_before_context_teardown(MemoryKind::managed, 0x2000, 0x20);
    const FreeClocks clocks = read_clocks_after_free();
    CHECK(clocks.of[a] == 100);
    CHECK(clocks.of[b] == 101);
    tell_after_free(MemoryKind::pool, 0x1000, 0x10, clocks);
    tell_pool_released();
    CHECK(heard == std::vector<std::string>{
                       "first before pool 4096+16", "second before pool 4096+16",
                       "first teardown managed 8192+32", "second teardown managed 8192+32",
                       "first after pool 4096+16 clock 100", "second after pool 4096+16 clock 101",
                       "first pool", "second pool"});
    hot_line.free_listeners.store(0);
}
