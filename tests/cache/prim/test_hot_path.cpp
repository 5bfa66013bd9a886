// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The pieces that keep the shim's allocation path short (hot_path.h): event
// times from the TSC, the huge-page arena, the per-thread state found
// without the GOT.
#include "cache/events/event_clock.h"
#include "cache/events/process_line.h"
#include "cache/events/queued_event.h"
#include "cache/events/thread_state.h"
#include "cache/prim/cycle_counter.h"
#include "cache/prim/hot_arena.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using namespace gdrhook;

TEST_CASE("an event stamped with the TSC is written with the wall time it was stamped at")
{
    start_event_clock(true);
    if (!event_clock_counts_tsc())
        WARN("no invariant TSC kept by the kernel here: only CLOCK_REALTIME is tested");
    const uint64_t before = realtime_ns();
    Event event;
    stamp_now(event);
    const uint64_t after = realtime_ns();
    CHECK((event.tsc != 0) == event_clock_counts_tsc());
    // Converted later, as the worker does: the event's age is taken away.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    const uint64_t written = event_realtime_ns(event);
    const uint64_t slack = 20000; // 20 us: the clocks' read jitter, and then some
    CHECK(written + slack >= before);
    CHECK(written <= after + slack);
    start_event_clock(true); // leave the clock as the runtime would
}

TEST_CASE("without the TSC an event carries CLOCK_REALTIME itself")
{
    start_event_clock(false);
    const uint64_t before = realtime_ns();
    Event event;
    stamp_now(event);
    CHECK(event.tsc == 0);
    CHECK(event.ts_ns >= before);
    CHECK(event_realtime_ns(event) == event.ts_ns);
    start_event_clock(true);
}

TEST_CASE("the process line's clock anchor names the counter events carry")
{
    ProcessDescription process;
    process.tsc = true;
    process.tsc_value = 5;
    process.tsc_hz = 7;
    const std::string line = format_process_line(process, 1, 1);
    INFO(line);
#if defined(__x86_64__)
    CHECK(line.find(R"("clock":{"source":"tsc",)") != std::string::npos);
    CHECK(line.find(R"("tsc":5,"tsc_hz":7})") != std::string::npos);
#else
    CHECK(line.find(R"("clock":{"source":"cntvct",)") != std::string::npos);
    CHECK(line.find(R"("cntvct":5,"cntvct_hz":7})") != std::string::npos);
#endif
    process.tsc = false;
    CHECK(format_process_line(process, 1, 1).find(R"("clock":{"source":"realtime",)") !=
          std::string::npos);
}

#if defined(__x86_64__)
TEST_CASE("on x86-64 the TSC keeps time only where the kernel keeps time with it")
{
    // Whatever this CPU's invariance bit says, a kernel that moved off the
    // TSC (it found it unstable or unsynchronized) is believed.
    CHECK_FALSE(cycle_counter_keeps_time("hpet"));
    CHECK_FALSE(cycle_counter_keeps_time("acpi_pm"));
    CHECK_FALSE(cycle_counter_keeps_time(""));
    CHECK_FALSE(cycle_counter_keeps_time("tsc-early"));
}
#endif

#if defined(__aarch64__)
TEST_CASE("on aarch64 events carry the generic timer's count, at CNTFRQ_EL0's rate")
{
    start_event_clock(true);
    REQUIRE(cycle_counter_nominal_hz() != 0);
    CHECK(event_clock_counts_tsc()); // always: no /sys check (cycle_counter.h)
    CHECK(event_clock_tsc_hz() == cycle_counter_nominal_hz());
    // The count moves at that rate: 50 ms of CLOCK_MONOTONIC is 50 ms of
    // counts, within 20% (an emulator's scheduling between the reads).
    const uint64_t count_before = read_cycle_counter(), ns_before = monotonic_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const uint64_t counts = read_cycle_counter() - count_before;
    const uint64_t ns = monotonic_ns() - ns_before;
    const double counted_ns =
        static_cast<double>(counts) * 1e9 / static_cast<double>(cycle_counter_nominal_hz());
    CHECK(counted_ns > 0.8 * static_cast<double>(ns));
    CHECK(counted_ns < 1.2 * static_cast<double>(ns));
}
#endif

TEST_CASE("the queue's compact form keeps which clock an event's time is on")
{
    Event tsc_event;
    tsc_event.tsc = 123456789012345ull;
    QueuedEvent queued;
    REQUIRE(pack(tsc_event, queued));
    Event back = unpack(queued, 1);
    CHECK(back.tsc == tsc_event.tsc);
    CHECK(back.ts_ns == 0);

    Event wall_event;
    wall_event.ts_ns = 1795366155830512914ull;
    REQUIRE(pack(wall_event, queued));
    back = unpack(queued, 2);
    CHECK(back.ts_ns == wall_event.ts_ns);
    CHECK(back.tsc == 0);

    Event odd; // a time with the top bit set cannot be told apart: sent whole
    odd.ts_ns = 1ull << 63;
    CHECK_FALSE(pack(odd, queued));
}

TEST_CASE("the hot arena hands out aligned memory, then the heap once it is full")
{
    void *first = hot_arena_allocate(100, 64);
    REQUIRE(first != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(first) % 64 == 0);
    const bool mapped = in_hot_arena(first);
    if (!mapped)
        WARN("no arena here (it cannot be mapped, or AddressSanitizer is on): everything came from "
             "the heap");

    // Larger than the whole arena: always the heap, and it can be freed.
    void *big = hot_arena_allocate(hot_arena_size + 1, 4096);
    CHECK_FALSE(in_hot_arena(big));
    CHECK(reinterpret_cast<uintptr_t>(big) % 4096 == 0);
    static_cast<char *>(big)[hot_arena_size] = 1;
    hot_arena_release(big);

    // Fill the arena: every block is aligned, inside it or (once full) not.
    size_t in_arena = 0, on_heap = 0;
    std::vector<void *> blocks;
    for (int i = 0; i < 80; ++i) {
        void *block = hot_arena_allocate(64 << 10, 128);
        CHECK(reinterpret_cast<uintptr_t>(block) % 128 == 0);
        static_cast<char *>(block)[0] = 1;
        (in_hot_arena(block) ? in_arena : on_heap) += 1;
        blocks.push_back(block);
    }
    CHECK(on_heap > 0); // 80 x 64 KiB do not fit in 2 MiB
    if (mapped)
        CHECK(in_arena > 0);
    for (void *block : blocks)
        hot_arena_release(block); // frees the heap ones, keeps the others
    hot_arena_release(first);
}

TEST_CASE("a hot array constructs and destroys its elements")
{
    static int alive = 0;
    struct Counted {
        Counted() { ++alive; }
        ~Counted() { --alive; }
        int value = 7;
    };
    {
        HotArray<Counted> array = make_hot_array<Counted>(5);
        CHECK(alive == 5);
        CHECK(array[4].value == 7);
    }
    CHECK(alive == 0);
}

TEST_CASE("each thread finds its own hot state, where the compiler puts it")
{
    HotThreadState *mine = &hot_thread_state();
    CHECK(mine == &hot_thread_state_slot);
    mine->tid = 11;
    HotThreadState *theirs = nullptr;
    int their_tid = -1;
    std::thread([&] {
        theirs = &hot_thread_state();
        their_tid = theirs->tid;
        CHECK(theirs == &hot_thread_state_slot);
    }).join();
    CHECK(theirs != mine);
    CHECK(their_tid == 0); // a fresh thread's copy, not ours
    CHECK(hot_thread_state().tid == 11);
    mine->tid = 0;
}
