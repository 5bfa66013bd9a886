// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The queue's orderings as aarch64 machine code (built on aarch64 only).
//
// On x86-64 every store is a release and every load an acquire, so a
// memory order missing from event_queue.h costs nothing there; on aarch64
// it lets the consumer read a cell before the producer's item reached it.
// The aarch64 leg of the suites runs under qemu-user on an x86-64 machine,
// which executes aarch64 loads and stores with the host's stronger
// ordering: a stress test there cannot see a missing barrier. The
// instructions the compiler made can. Each probe below is one operation of
// the queue compiled into a section of its own, whose bounds the linker
// gives us, and its code must hold the instruction that orders it: STLR (a
// store-release) for a publish, LDAR or LDAPR (a load-acquire) for a read
// of what another thread published, or a full DMB ISH in their place.
#include "cache/events/event_queue.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>

#if !defined(__aarch64__)
#error "test_queue_barriers_aarch64.cpp checks aarch64 code (tests/unit/meson.build)"
#endif

using Queue = gdrhook::BoundedMpscQueue<uint64_t>;

// flatten: the queue's code is inlined into the probe, so that the probe's
// section holds it.
#define QUEUE_PROBE(name) __attribute__((noinline, used, flatten, section(#name)))

QUEUE_PROBE(queue_probe_push) bool probe_push(Queue &queue, uint64_t item)
{
    return queue.try_push(item);
}

QUEUE_PROBE(queue_probe_take) bool probe_take(Queue &queue, uint64_t &item, size_t &position)
{
    return queue.try_take(item, position);
}

QUEUE_PROBE(queue_probe_release) void probe_release(Queue &queue)
{
    queue.release_taken();
}

// GNU ld's bounds of each section whose name is an identifier.
extern "C" const uint32_t __start_queue_probe_push[], __stop_queue_probe_push[];
extern "C" const uint32_t __start_queue_probe_take[], __stop_queue_probe_take[];
extern "C" const uint32_t __start_queue_probe_release[], __stop_queue_probe_release[];

namespace {

struct Code {
    const uint32_t *begin, *end;
};

// STLR Wt/Xt, [Xn]: size x, 0b001000100, L=0, Rs=11111, o0=1, Rt2=11111.
bool is_store_release(uint32_t insn)
{
    return (insn & 0xbffffc00u) == 0x889ffc00u;
}

// LDAR Wt/Xt, [Xn], or LDAPR (ARMv8.3 RCpc, where the target has it).
bool is_load_acquire(uint32_t insn)
{
    return (insn & 0xbffffc00u) == 0x88dffc00u || (insn & 0xbffffc00u) == 0xb8bfc000u;
}

bool is_full_barrier(uint32_t insn)
{
    return insn == 0xd5033bbfu; // DMB ISH
}

template <typename Predicate> size_t count(Code code, Predicate matches)
{
    size_t n = 0;
    for (const uint32_t *insn = code.begin; insn != code.end; ++insn) {
        uint32_t word;
        std::memcpy(&word, insn, sizeof word);
        n += matches(word) || is_full_barrier(word);
    }
    return n;
}

} // namespace

TEST_CASE("on aarch64 a push publishes its item with a store-release after an acquire of the cell")
{
    const Code push{__start_queue_probe_push, __stop_queue_probe_push};
    REQUIRE(push.end > push.begin);
    CHECK(count(push, is_store_release) >= 1); // the cell's sequence: the item is complete
    CHECK(count(push, is_load_acquire) >= 1);  // the consumer's last read of the cell is done
}

TEST_CASE("on aarch64 the consumer reads a cell's sequence with a load-acquire")
{
    const Code take{__start_queue_probe_take, __stop_queue_probe_take};
    REQUIRE(take.end > take.begin);
    CHECK(count(take, is_load_acquire) >= 1);
}

TEST_CASE("on aarch64 the consumer hands cells back with a store-release")
{
    const Code release{__start_queue_probe_release, __stop_queue_probe_release};
    REQUIRE(release.end > release.begin);
    CHECK(count(release, is_store_release) >= 1);
}

TEST_CASE("the probes are the queue's own operations, and they work")
{
    Queue queue(4);
    REQUIRE(probe_push(queue, 7));
    uint64_t item = 0;
    size_t position = 99;
    REQUIRE(probe_take(queue, item, position));
    CHECK(item == 7);
    CHECK(position == 0);
    probe_release(queue);
    for (uint64_t i = 0; i < 4; ++i) // every cell was handed back: a full lap fits
        CHECK(probe_push(queue, i));
}
