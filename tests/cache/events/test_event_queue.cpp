// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/event_queue.h"
#include "cache/events/queued_event.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
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

using gdrhook::Event;
using gdrhook::EventKind;
using gdrhook::MemoryKind;
using gdrhook::QueuedEvent;
using gdrhook::Via;

TEST_CASE("the compact queue form keeps every field of an event the hook records")
{
    Event e;
    e.ts_ns = 1795366155830512914ull;
    e.addr = 0x7f734569b000ull;
    e.size = 64ull << 30;
    e.entry_id = 0xfedcba9876543210ull;
    e.api = "cuMemFree_v2";
    e.msg = "verify: a cache hit disagrees with the driver's buffer id";
    e.backend = "dmabuf";
    e.tid = 4398;
    e.dev = 7;
    e.rc = 201;
    e.kind = EventKind::error;
    e.via = Via::proc_address;
    e.mem = MemoryKind::vmm_mapping;
    QueuedEvent queued;
    REQUIRE(gdrhook::pack(e, queued));
    CHECK_FALSE(gdrhook::is_placeholder(queued));
    Event back = gdrhook::unpack(queued, 42);
    CHECK(back.seq == 42);
    CHECK(back.ts_ns == e.ts_ns);
    CHECK(back.addr == e.addr);
    CHECK(back.size == e.size);
    CHECK(back.entry_id == e.entry_id);
    CHECK(back.api == e.api);
    CHECK(back.msg == e.msg);
    CHECK(back.backend == e.backend);
    CHECK(back.reason == nullptr);
    CHECK(back.tid == e.tid);
    CHECK(back.dev == e.dev);
    CHECK(back.rc == e.rc);
    CHECK(back.kind == e.kind);
    CHECK(back.via == e.via);
    CHECK(back.mem == e.mem);

    e.msg = nullptr;
    e.dev = -1;
    REQUIRE(gdrhook::pack(e, queued));
    CHECK(gdrhook::unpack(queued, 0).msg == nullptr);
    CHECK(gdrhook::unpack(queued, 0).dev == -1);
}

TEST_CASE("the compact queue form refuses what it cannot hold")
{
    Event e;
    QueuedEvent queued;
    e.lat_ns = 1;
    CHECK_FALSE(gdrhook::pack(e, queued));
    e.lat_ns = 0;
    e.reason = "evicted";
    CHECK_FALSE(gdrhook::pack(e, queued));
    e.reason = nullptr;
    gdrhook::ProcessSample sample{};
    e.sample = &sample;
    CHECK_FALSE(gdrhook::pack(e, queued));
    e.sample = nullptr;
    e.dev = 300;
    CHECK_FALSE(gdrhook::pack(e, queued));
    e.dev = 0;
    // A string far from the binary's own (the heap of a big process can be):
    // 4 GiB past a literal cannot be a 32-bit offset.
    const uintptr_t far = reinterpret_cast<uintptr_t>("cuMemAlloc_v2") + (4ull << 30);
    e.api = reinterpret_cast<const char *>(far);
    CHECK_FALSE(gdrhook::pack(e, queued));
    CHECK(gdrhook::is_placeholder(gdrhook::placeholder()));
}

TEST_CASE("a taken item keeps its cell until the consumer releases it")
{
    BoundedMpscQueue<Item> queue(4);
    for (uint32_t i = 0; i < 4; ++i)
        REQUIRE(queue.try_push({0, i}));
    Item item{};
    size_t position = 0;
    REQUIRE(queue.try_take(item, position));
    CHECK(position == 0);
    REQUIRE(queue.try_take(item, position));
    CHECK(position == 1);
    // Taken, not released: the producers still find the ring full (the
    // journal's reader counts on it, cache/events/journal_layout.h).
    CHECK_FALSE(queue.try_push({0, 4}));
    queue.release_taken();
    CHECK(queue.try_push({0, 4}));
    CHECK(queue.try_push({0, 5}));
    CHECK_FALSE(queue.try_push({0, 6}));
}

TEST_CASE("a queue over memory it is given keeps its cells there")
{
    using Queue = BoundedMpscQueue<gdrhook::QueuedEvent>;
    alignas(64) static unsigned char cells[8 * Queue::cell_size];
    Queue queue(8, cells);
    gdrhook::QueuedEvent event{};
    event.addr = 0x1234;
    REQUIRE(queue.try_push(event));
    // The layout the journal's reader expects: the sequence word (position
    // + 1: published, not released), then the event.
    uint64_t sequence = 0;
    memcpy(&sequence, cells, sizeof sequence);
    CHECK(sequence == 1);
    gdrhook::QueuedEvent stored{};
    memcpy(&stored, cells + 8, sizeof stored);
    CHECK(stored.addr == 0x1234);
}
