// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/event_queue.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

using gdrhook::BoundedMpscQueue;

namespace {
struct Item {
    uint32_t producer;
    uint32_t index;
};
} // namespace

TEST_CASE("the queue holds exactly its capacity and refuses the next item")
{
    BoundedMpscQueue<Item> queue(8);
    for (uint32_t i = 0; i < 8; ++i)
        REQUIRE(queue.try_push({0, i}));
    CHECK_FALSE(queue.try_push({0, 8}));
    Item item{};
    for (uint32_t i = 0; i < 8; ++i) {
        REQUIRE(queue.try_pop(item));
        CHECK(item.index == i);
    }
    CHECK_FALSE(queue.try_pop(item));
    CHECK_FALSE(queue.maybe_nonempty());
}

TEST_CASE("many producers: every item comes out exactly once, in each producer's order")
{
    const uint32_t producers = 8, per_producer = 200000;
    BoundedMpscQueue<Item> queue(64); // small: producers often find it full
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (uint32_t p = 0; p < producers; ++p) {
        threads.emplace_back([&, p] {
            while (!go.load())
                std::this_thread::yield();
            for (uint32_t i = 0; i < per_producer;) {
                if (queue.try_push({p, i}))
                    ++i;
                else
                    std::this_thread::yield();
            }
        });
    }
    go = true;
    std::vector<uint32_t> next(producers, 0);
    uint64_t received = 0, out_of_order = 0;
    Item item{};
    while (received < uint64_t(producers) * per_producer) {
        if (!queue.try_pop(item)) {
            std::this_thread::yield();
            continue;
        }
        if (item.producer >= producers || item.index != next[item.producer])
            ++out_of_order;
        else
            ++next[item.producer];
        ++received;
    }
    for (auto &t : threads)
        t.join();
    CHECK(out_of_order == 0);
    for (uint32_t p = 0; p < producers; ++p)
        CHECK(next[p] == per_producer);
    CHECK_FALSE(queue.try_pop(item));
}

TEST_CASE("reset empties the queue")
{
    BoundedMpscQueue<Item> queue(4);
    queue.try_push({1, 1});
    queue.reset();
    Item item{};
    CHECK_FALSE(queue.try_pop(item));
    CHECK(queue.try_push({2, 2}));
    REQUIRE(queue.try_pop(item));
    CHECK(item.producer == 2);
}
