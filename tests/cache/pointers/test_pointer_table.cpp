// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The pointer table (cache/pointers/pointer_table.h) on its own, crowded:
// far more records than slots, so that buckets overflow and move their
// records, and hints name slots that now hold other records. Whatever a
// lookup finds must be the record whose range holds the pointer; a record
// just put is found from the pointer it was put for.
#include "cache/pointers/pointer_table.h"

#include <catch2/catch.hpp>

#include <cstdint>

using namespace gdrhook;

namespace {

constexpr uint64_t first_base = 0x7f0000000000;
constexpr uint64_t spacing = 128 * 1024; // a 64 KiB allocation, then a gap
constexpr uint64_t allocation_size = 64 * 1024;

PointerRecord record_of(uint64_t i)
{
    PointerRecord r;
    r.base = first_base + i * spacing;
    r.size = allocation_size;
    r.buffer_id = i + 1;
    r.known_single = attribute_bit(AnsweredAttribute::buffer_id);
    return r;
}

} // namespace

TEST_CASE("a crowded pointer table answers only with the record that holds the pointer",
          "[pointer_table]")
{
    static PointerTable table; // its arrays are never freed: one table a process
    const uint64_t count = 3 * PointerTable::bucket_count * PointerTable::bucket_slots;
    for (uint64_t i = 0; i < count; ++i) {
        const PointerRecord r = record_of(i);
        const uint64_t ptr = r.base + 0x1000 * (i % 16);
        {
            std::lock_guard<SpinThenSleepMutex> lock(table.lock());
            REQUIRE(table.put(r, ptr));
        }
        PointerRecord found;
        REQUIRE(table.find(ptr, found)); // just put: its hint names its slot
        REQUIRE(found.base == r.base);
        REQUIRE(found.buffer_id == r.buffer_id);
    }
    uint64_t wrong = 0, in_gaps = 0;
    for (uint64_t i = 0; i < count; ++i) {
        const PointerRecord r = record_of(i);
        PointerRecord found;
        for (uint64_t offset = 0; offset < allocation_size; offset += 0x1000)
            if (table.find(r.base + offset, found) &&
                (found.base != r.base || found.buffer_id != r.buffer_id))
                ++wrong;
        // Between two allocations: no record holds these pointers.
        in_gaps += table.find(r.base + allocation_size + 0x1000, found);
    }
    CHECK(wrong == 0);
    CHECK(in_gaps == 0);
}

TEST_CASE("the pointer table answers a single query only with what a single query gave",
          "[pointer_table]")
{
    // cuPointerGetAttributes writes 0 where cuPointerGetAttribute fails:
    // what only the first gave must not answer the second.
    static PointerTable table;
    PointerRecord r;
    r.base = first_base;
    r.size = allocation_size;
    r.buffer_id = 7;
    r.context = 9;
    r.known_many = attribute_bit(AnsweredAttribute::buffer_id);
    r.known_single = attribute_bit(AnsweredAttribute::context);
    {
        std::lock_guard<SpinThenSleepMutex> lock(table.lock());
        REQUIRE(table.put(r, r.base));
    }
    uint64_t value = 0;
    CHECK_FALSE(table.answer(r.base, AnsweredAttribute::buffer_id, value));
    REQUIRE(table.answer(r.base, AnsweredAttribute::context, value));
    CHECK(value == 9);
    PointerRecord found;
    REQUIRE(table.find(r.base, found));
    CHECK(found.known_many == r.known_many);
    CHECK(found.buffer_id == 7);
}
