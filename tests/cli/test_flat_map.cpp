// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "report/flat_map.h"

#include <catch2/catch.hpp>

#include <unordered_map>

using namespace gdrhook::cli;

TEST_CASE("the flat map agrees with std::unordered_map through inserts, overwrites and erases",
          "[flat_map]")
{
    FlatMap<uint64_t> map;
    std::unordered_map<uint64_t, uint64_t> model;
    uint64_t x = 88172645463325252ull;
    auto rnd = [&] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x;
    };
    for (int step = 0; step < 200000; ++step) {
        // Few distinct keys, 64 KiB apart like allocations: long probe runs,
        // wrap-around and back shifts all happen.
        uint64_t key = 0x7f0000000000 + (rnd() % 3000) * 65536;
        if (step % 1000 == 999)
            key = ~uint64_t{0}; // the key that marks an empty slot
        if (rnd() % 3 != 0) {
            uint64_t value = rnd();
            map.set(key, value);
            model[key] = value;
        } else {
            REQUIRE(map.erase(key) == (model.erase(key) == 1));
        }
        if (step % 997 == 0) {
            REQUIRE(map.size() == model.size());
            for (const auto &[k, v] : model) {
                const uint64_t *found = map.find(k);
                REQUIRE(found);
                REQUIRE(*found == v);
            }
        }
    }
    size_t visited = 0;
    map.for_each([&](uint64_t k, uint64_t v) {
        ++visited;
        CHECK(model.at(k) == v);
    });
    CHECK(visited == model.size());
    CHECK(map.find(0x1234) == nullptr);
}
