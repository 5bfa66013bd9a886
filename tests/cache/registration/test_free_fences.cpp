// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Which fence a free's unpin pays (cache/prim/asymmetric_fence.h,
// cache/registration/reclaimer.h): a free releases its pin after a full
// fence of its own, never after membarrier(2), which costs microseconds
// and interrupts every running thread of the process; the memory its
// entry and the index's old blocks occupy waits for the worker, which frees
// it once a batch waits, with one heavy fence for the batch.
#include "cache/prim/asymmetric_fence.h"
#include "fakes.h"

#include <catch2/catch.hpp>

using namespace gdrhook;
using namespace gdrhook::testing;

namespace {

constexpr uint64_t first_buffer = 0x40000000;

// Pins a buffer of its own, frees it as the shim's free does (its entry
// retired, then released on this thread) and returns the pin's handle.
uint64_t pin_and_free(Fixture &f, uint64_t n)
{
    const uint64_t base = first_buffer + n * MiB;
    f.memory.allocate(base, MiB);
    Registration reg;
    REQUIRE(f.cache->lookup(base, 4096, reg).ok());
    REQUIRE(f.cache->invalidate_to_unpin(base, MiB) == 1);
    f.cache->unpin_retired();
    f.memory.free(base);
    return reg.handle;
}

} // namespace

TEST_CASE("a free releases its pin without the heavy fence", "[cache]")
{
    Fixture f;
    const uint64_t heavy_before = registration_fence.heavy_calls();
    const uint64_t handle = pin_and_free(f, 0);
    CHECK_FALSE(f.backend->is_live(handle)); // released, before the free returned
    CHECK(f.cache->stats().unpins == 1);
    CHECK(registration_fence.heavy_calls() == heavy_before);
    CHECK(f.backend->bad_unpins == 0);
}

TEST_CASE("a held entry's release after its put takes no heavy fence either", "[cache]")
{
    Fixture f;
    f.memory.allocate(first_buffer, MiB);
    HeldRegistration held;
    REQUIRE(f.cache->get(first_buffer, 4096, held).ok());
    const uint64_t handle = held.reg.handle;
    const uint64_t heavy_before = registration_fence.heavy_calls();
    REQUIRE(f.cache->invalidate_to_unpin(first_buffer, MiB) == 1);
    f.cache->unpin_retired();
    CHECK(f.backend->is_live(handle)); // held: the free left it
    f.cache->put(held);
    f.cache->unpin_retired(); // as the next free would
    CHECK_FALSE(f.backend->is_live(handle));
    CHECK(registration_fence.heavy_calls() == heavy_before);
}

TEST_CASE("the worker frees what frees left once a batch waits, with one heavy fence", "[cache]")
{
    Fixture f;
    pin_and_free(f, 0);
    f.drain();
    // One free's leftovers are not a batch: the worker's drain leaves them.
    const uint64_t heavy_before = registration_fence.heavy_calls();
    REQUIRE(f.cache->stats().unfreed > 0);
    CHECK(f.cache->stats().unfreed < memory_round_batch);
    f.drain();
    CHECK(registration_fence.heavy_calls() == heavy_before);
    CHECK(f.cache->stats().unfreed > 0);

    // Enough frees that a batch waits (each leaves its entry at least).
    uint64_t frees = 1;
    while (f.cache->stats().unfreed < memory_round_batch && frees <= memory_round_batch)
        pin_and_free(f, frees++);
    REQUIRE(f.cache->stats().unfreed >= memory_round_batch);
    CHECK(registration_fence.heavy_calls() == heavy_before); // the frees took none

    f.drain();
    CHECK(registration_fence.heavy_calls() == heavy_before + 1);
    CHECK(f.cache->stats().unfreed == 0); // no read section was open
    CHECK(f.cache->stats().unpins == frees);
    CHECK(f.backend->bad_unpins == 0);
}
