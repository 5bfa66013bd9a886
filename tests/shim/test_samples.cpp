// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// GDRHOOK_SAMPLE_MS through the loader, against the fake driver: a quiet
// program holding three pinned buffers for 300 ms gets `sample` lines about
// every 20 ms, from the worker, whose values agree with what the events
// say is pinned; without the variable there are none.
#include "event_lines.h"

#include <catch2/catch.hpp>

#include <algorithm>

namespace {

constexpr long long buffer_bytes = 2 << 20;

std::vector<EventLine> samples_of(const std::vector<EventLine> &events)
{
    std::vector<EventLine> samples;
    for (const EventLine &e : events)
        if (e["ev"] == "sample")
            samples.push_back(e);
    return samples;
}

// Runs `coherence_churn sleep` (buffers of 2 MiB held for `ms`) under
// the shim with pin-on-alloc, `extra` added to its environment; returns
// its event log.
std::vector<EventLine> run_sleep(int buffers, int ms,
                                 const std::map<std::string, std::string> &extra)
{
    std::string log = make_temp_dir() + "/events.jsonl";
    auto env = pinning_environment(log);
    for (const auto &entry : extra)
        env[entry.first] = entry.second;
    RunResult run = run_program({build_path("GDRHOOKTEST_COHERENCE_CHURN"), "sleep",
                                 std::to_string(buffers), std::to_string(ms), "2"},
                                env);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    return read_event_file(log);
}

} // namespace

TEST_CASE("GDRHOOK_SAMPLE_MS=20 logs samples of the process about every 20 ms")
{
    std::vector<EventLine> events = run_sleep(3, 300, {{"GDRHOOK_SAMPLE_MS", "20"}});
    std::vector<EventLine> samples = samples_of(events);
    REQUIRE(!samples.empty());
    // About 15. The worker samples on a 20 ms grid that starts with its
    // first event and ends when it stops, before the exit's unpins are
    // stamped: so no more than the log's own span allows. The samples'
    // own span is no bound: a loaded machine may delay the stamp of the
    // first sample past the second's slot.
    long long first_ts = events.front().number("ts_ns"), last_ts = first_ts;
    for (const EventLine &e : events) {
        first_ts = std::min(first_ts, e.number("ts_ns"));
        last_ts = std::max(last_ts, e.number("ts_ns"));
    }
    const double log_span_ms = static_cast<double>(last_ts - first_ts) / 1e6;
    INFO(samples.size() << " samples in a log spanning " << log_span_ms << " ms");
    CHECK(samples.size() >= 3);
    CHECK(static_cast<double>(samples.size()) <= log_span_ms / 20 + 1);

    long long pinned_by_events = 0;
    for (const EventLine &e : events)
        if (e["ev"] == "pin")
            pinned_by_events += e.number("size");
    CHECK(pinned_by_events == 3 * buffer_bytes);

    const long long pid = events.front().number("pid");
    size_t all_three_pinned = 0;
    for (const EventLine &s : samples) {
        INFO("sample at seq " << s.number("seq"));
        CHECK(s.number("pid") == pid);
        CHECK(s.number("tid") != pid); // the worker's thread
        CHECK(s["api"] == "gdrhook_worker");
        CHECK(s["addr"] == "0x0");
        CHECK(s.number("size") == 0);
        CHECK(s.number("dev") == -1);
        CHECK(s.number("rc") == 0);
        CHECK(s.has("via"));
        CHECK(s.number("rss_bytes") > 0);
        // What the cache holds, never more than the program's three pins.
        const long long pins = s.number("pins");
        const long long pinned = s.number("pinned_bytes");
        CHECK(pins >= 0);
        CHECK(pins <= 3);
        CHECK(pinned == pins * buffer_bytes);
        // Each dma-buf pin holds a descriptor, and the log is open too.
        CHECK(s.number("fds") > pins);
        all_three_pinned += pins == 3;
    }
    // The program sleeps with all three pinned for most of its 300 ms.
    CHECK(all_three_pinned >= 1);

    // A sample takes the seq of the last event before it: the log stays in
    // seq order.
    for (size_t i = 1; i < events.size(); ++i)
        CHECK(events[i].number("seq") >= events[i - 1].number("seq"));
}

TEST_CASE("without GDRHOOK_SAMPLE_MS there are no samples")
{
    std::vector<EventLine> events = run_sleep(2, 100, {});
    CHECK(events.size() >= 4); // the allocations and frees are there
    CHECK(samples_of(events).empty());
}

TEST_CASE("with GDRHOOK_PIN=off samples report nothing pinned")
{
    std::vector<EventLine> samples =
        samples_of(run_sleep(2, 100, {{"GDRHOOK_PIN", "off"}, {"GDRHOOK_SAMPLE_MS", "20"}}));
    REQUIRE(!samples.empty()); // the first as the worker starts
    for (const EventLine &s : samples) {
        CHECK(s.number("pins") == 0);
        CHECK(s.number("pinned_bytes") == 0);
        CHECK(s.number("fds") > 0);
    }
}
