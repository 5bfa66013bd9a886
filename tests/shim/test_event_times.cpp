// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// One time per event, the time it happened (docs/log-format.md, `ts_ns`):
// the README's demo under the shim with pin-on-alloc frees pinned buffers
// and goes on with other calls; each `unpin` its frees cause must carry
// the time the free released the pin, not the time the worker wrote the
// line, and must be written before the events that came after it.
#include "program_runs.h"

namespace {

std::vector<const EventLine *> of_kind(const std::vector<EventLine> &events, const char *ev)
{
    std::vector<const EventLine *> found;
    for (const EventLine &e : events)
        if (e["ev"] == ev)
            found.push_back(&e);
    return found;
}

bool written_by_worker(const EventLine &e)
{
    return e["api"] == "gdrhook_worker";
}

// The program's own event after `after` on the same thread: the next one
// in the order recorded (seq), or null.
const EventLine *next_on_thread(const std::vector<EventLine> &events, const EventLine &after)
{
    const EventLine *next = nullptr;
    for (const EventLine &e : events)
        if (!written_by_worker(e) && e["tid"] == after["tid"] &&
            e.number("seq") > after.number("seq") &&
            (!next || e.number("seq") < next->number("seq")))
            next = &e;
    return next;
}

// The free of the pinned range: the first free of its address recorded
// after the pin.
const EventLine *free_of(const std::vector<EventLine> &events, const EventLine &pin)
{
    const EventLine *found = nullptr;
    for (const EventLine &e : events)
        if (e["ev"] == "free" && e.number("rc") == 0 && e["addr"] == pin["addr"] &&
            e.number("seq") > pin.number("seq") &&
            (!found || e.number("seq") < found->number("seq")))
            found = &e;
    return found;
}

} // namespace

TEST_CASE("an unpin carries the time its free released the pin, before the program's next call")
{
    std::vector<EventLine> events = run_demo().events;
    std::map<std::string, const EventLine *> pin_of; // handle -> pin
    for (const EventLine &e : events)
        if (e["ev"] == "pin")
            pin_of[e["handle"]] = &e;
    const std::vector<const EventLine *> unpins = of_kind(events, "unpin");
    for (const EventLine *each : unpins) {
        const EventLine &unpin = *each;
        INFO("unpin of handle " << unpin["handle"] << " at " << unpin["ts_ns"]);
        REQUIRE(pin_of.count(unpin["handle"]));
        const EventLine *freed = free_of(events, *pin_of[unpin["handle"]]);
        REQUIRE(freed);
        INFO("its free at " << (*freed)["ts_ns"]);
        // The shim unpins inside the free, before the real free returns.
        CHECK(unpin.number("ts_ns") >= freed->number("ts_ns"));
        const EventLine *next = next_on_thread(events, *freed);
        REQUIRE(next); // the demo goes on after its frees
        INFO("the program's next call, " << (*next)["api"] << ", at " << (*next)["ts_ns"]);
        CHECK(unpin.number("ts_ns") <= next->number("ts_ns"));
    }
    CHECK(unpins.size() == pin_of.size());
    CHECK(unpins.size() >= 5); // the demo's five 64 MiB buffers
}

TEST_CASE("an unpin is written before every event of the program that came after it")
{
    // The demo has one thread: each of its events is stamped after the
    // one before returned, so a line of it stamped after an unpin began
    // happened after that unpin; a reader going through the file in order
    // must meet the unpin first.
    std::vector<EventLine> events = run_demo().events;
    for (size_t i = 0; i < events.size(); ++i) {
        if (events[i]["ev"] != "unpin")
            continue;
        for (size_t j = 0; j < i; ++j) {
            if (written_by_worker(events[j]))
                continue;
            INFO("line " << j << " (" << events[j]["ev"] << " " << events[j]["api"]
                         << ") is written before the unpin on line " << i);
            CHECK(events[j].number("ts_ns") <= events[i].number("ts_ns"));
        }
    }
}

TEST_CASE("a pin carries the time it began, not the time it was done")
{
    // Each export takes 20 ms more: a pin stamped as it ended would lie
    // within microseconds of the program's next call; one stamped as it
    // began lies the export's time before it.
    constexpr long long export_delay_ns = 20'000'000;
    std::vector<EventLine> events = run_demo({{"FAKECUDA_EXPORT_DELAY_US", "20000"}}).events;
    const std::vector<const EventLine *> pins = of_kind(events, "pin");
    for (const EventLine *each : pins) {
        const EventLine &pin = *each;
        INFO("pin of " << pin["addr"] << " at " << pin["ts_ns"]);
        // Pin-on-alloc pins inside the allocation's call: the call's own
        // event comes right before it, on the same thread.
        const EventLine *alloc = nullptr;
        for (const EventLine &e : events)
            if (e["tid"] == pin["tid"] && e.number("seq") == pin.number("seq") - 1)
                alloc = &e;
        REQUIRE(alloc);
        CHECK((*alloc)["ev"] == "alloc");
        CHECK(pin.number("ts_ns") >= alloc->number("ts_ns"));
        const EventLine *next = next_on_thread(events, pin);
        REQUIRE(next);
        INFO("the program's next call, " << (*next)["api"] << ", at " << (*next)["ts_ns"]);
        CHECK(next->number("ts_ns") - pin.number("ts_ns") >= export_delay_ns);
    }
    CHECK(pins.size() >= 5);
}
