// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The steps of a free that unpin before they return (cache/pinning/
// free_invalidation.h), whether or not anything asked the worker first: a
// pool's trim or destroy (before_pool_release(), cache/record/recorder.h)
// before the pool gives its memory back, and a free of a range whose pin
// an earlier free retired while it was held, and which was put back since.
//
// In a whole program a put() or a free always pokes the worker, and the
// step that follows finds that request still pending, or already done (or,
// loaded, not yet done): a step that only drained what was asked would
// look right there, and one that left it to the worker would too, often.
// Here the runtime runs in the test's own process over a cache whose
// wake-ups go nowhere, so the step finds retired pins that nobody asked
// to unpin, with the queue empty.
//
// Its own program: it starts the runtime and sets the process's cache on
// the hot line.
#include "cache/core/runtime.h"
#include "cache/notify/free_subscribers.h"
#include "cache/record/recorder.h"
#include "fakes.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <thread>

using namespace gdrhook;
using namespace gdrhook::testing;

namespace {

uint64_t current_context()
{
    return 0xc0;
}
int32_t current_device()
{
    return 0;
}

void start_runtime_here()
{
    static const bool started = [] {
        setenv("GDRHOOK_EVENTS", "pool_release_test.jsonl", 1);
        setenv("GDRHOOK_UCX", "off", 1);
        setenv("GDRHOOK_PIN", "demand", 1); // the worker's unpinner exists
        static DriverQueries queries;
        queries.current_context = current_context;
        queries.current_device = current_device;
        return start_runtime(queries);
    }();
    REQUIRE(started);
}

// The process's cache for one test: a fake backend, and no wake-up (the
// put() below asks nobody to unpin).
struct ProcessCache {
    Fixture f;

    ProcessCache()
    {
        REQUIRE(hot_line.cache.load() == nullptr);
        hot_line.cache.store(f.cache.get());
        start_listening(runtime().cache_subscription);
    }
    ~ProcessCache()
    {
        hot_line.free_listeners.store(0);
        hot_line.cache.store(nullptr);
        // A free's poke may have the worker inside the cache now: its batch
        // runs under the consumer lock, which this drain waits for; the
        // next one finds no cache.
        hot_line.pipeline->drain_now();
    }

    // A pin held across the invalidation of its range (another thread's
    // free of the address, whose new allocation this pin was made for) and
    // put back after: retired, held by nobody, and not yet unpinned.
    void leave_retired_pin(uint64_t base)
    {
        f.memory.allocate(base, 2 * MiB);
        HeldRegistration held;
        REQUIRE(f.cache->get(base, 4096, held).ok());
        f.cache->invalidate(base, 2 * MiB);
        f.cache->unpin_retired(); // what a free does: held, so it stays
        f.memory.free(base);
        REQUIRE(f.backend->live_count() == 1);
        f.cache->put(held);
        REQUIRE(f.cache->has_retired());
    }
};

// The worker has started and drained everything, and sleeps.
void start_worker_and_let_it_idle()
{
    const uint64_t written = hot_line.pipeline->stats().written;
    Event event;
    event.kind = EventKind::alloc;
    event.api = "cuMemAlloc_v2";
    hot_line.pipeline->submit(event);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (hot_line.pipeline->stats().written == written &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(hot_line.pipeline->stats().written > written);
}

} // namespace

TEST_CASE("a pool release unpins what is retired before it returns, though nobody asked")
{
    start_runtime_here();
    SECTION("before the worker started")
    {
        // What the runtime queued as it started is written here, on this
        // thread: nothing is queued when the release comes.
        hot_line.pipeline->drain_now();
        REQUIRE_FALSE(hot_line.pipeline->may_hold_events());
        ProcessCache process;
        process.leave_retired_pin(0x700000000);
        before_pool_release();
        CHECK(process.f.backend->live_count() == 0);
        CHECK(process.f.backend->bad_unpins == 0);
    }
    SECTION("with the worker started and idle")
    {
        start_worker_and_let_it_idle();
        ProcessCache process;
        process.leave_retired_pin(0x710000000);
        before_pool_release();
        CHECK(process.f.backend->live_count() == 0);
        CHECK(process.f.backend->bad_unpins == 0);
    }
}

TEST_CASE("a free unpins what a put left retired over its range before it returns, though it "
          "removed nothing")
{
    // Another thread's free of the address retired the pin while this one
    // held it (a false invalidation: the pin began before that free read
    // its clock), and took nothing out of the index for this free to find.
    // The memory is this one's: it must not stay exported past its free.
    start_runtime_here();
    hot_line.pipeline->drain_now();
    ProcessCache process;
    process.leave_retired_pin(0x720000000);
    tell_before_free(MemoryKind::device, 0x720000000, 2 * MiB);
    CHECK(process.f.backend->live_count() == 0);
    CHECK(process.f.backend->bad_unpins == 0);
}
