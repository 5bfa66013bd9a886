// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What each event and invalidation is attributed to, on the paths where it
// can go wrong (tests/programs/attribution.cpp): the device of a thread
// that switched contexts, the kind of a VMM unmap the shim no longer
// tracks, the imported range of an IPC close.
#include "program_runs.h"

#include <regex>

namespace {

struct AttributionRun {
    RunResult run;
    std::vector<EventLine> events;
};

AttributionRun run_attribution(const std::string &mode)
{
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run = run_test_program("GDRHOOKTEST_ATTRIBUTION", {mode}, log, true);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    std::vector<EventLine> events = read_recorded_events(log);
    check_no_error_events(events);
    return {run, events};
}

std::vector<const EventLine *> events_of(const std::vector<EventLine> &events,
                                         const std::string &ev, const std::string &api)
{
    std::vector<const EventLine *> found;
    for (const EventLine &e : events)
        if (e["ev"] == ev && e["api"] == api)
            found.push_back(&e);
    return found;
}

} // namespace

TEST_CASE("an allocation carries the device of the context current at the call, after a switch too")
{
    AttributionRun r = run_attribution("contexts");
    std::map<std::string, long long> expected; // address -> device
    const std::regex line("expect addr=(0x[0-9a-f]+) dev=([0-9]+)");
    for (std::sregex_iterator it(r.run.output.begin(), r.run.output.end(), line), end; it != end;
         ++it)
        expected[(*it)[1]] = std::stoll((*it)[2]);
    REQUIRE(expected.size() == 6); // every allocation at an address of its own
    size_t allocations = 0;
    for (const EventLine &e : r.events) {
        if (e["ev"] != "alloc" && e["ev"] != "free")
            continue;
        INFO(e["ev"] << " " << e["api"] << " at " << e["addr"]);
        REQUIRE(expected.count(e["addr"]) == 1);
        CHECK(e.number("dev") == expected[e["addr"]]);
        allocations += e["ev"] == "alloc";
    }
    CHECK(allocations == expected.size());
    // Both devices' memory was pinned under pin-on-alloc, each pin with
    // the device of its allocation.
    for (const EventLine &e : r.events)
        if (e["ev"] == "pin")
            CHECK(e.number("dev") == expected[e["addr"]]);
}

TEST_CASE(
    "a VMM unmap is logged as vmm, over several mappings and where the shim no longer tracks it")
{
    AttributionRun r = run_attribution("vmm");
    std::vector<const EventLine *> unmaps = events_of(r.events, "free", "cuMemUnmap");
    REQUIRE(unmaps.size() == 2);
    for (const EventLine *e : unmaps) {
        INFO("unmap at " << (*e)["addr"]);
        CHECK((*e)["kind"] == "vmm");
        CHECK(e->number("rc") == 0);
    }
    // One unmap ended two mappings: one event, both sizes, device 0.
    CHECK(unmaps[0]->number("size") == output_field(r.run.output, "unmapped_both"));
    CHECK(unmaps[0]->number("dev") == 0);
    // The teardown released what was still mapped, and nothing the unmap
    // had ended (its second mapping too is forgotten).
    std::vector<const EventLine *> teardowns =
        events_of(r.events, "ctx_destroy", "cuCtxDestroy_v2");
    REQUIRE(teardowns.size() == 1);
    CHECK(teardowns[0]->number("size") == output_field(r.run.output, "torn_down_bytes"));
    // The last mapping left the tracker with its context: the unmap still
    // says what it unmapped.
    CHECK(unmaps[1]->number("size") == output_field(r.run.output, "unmapped_last"));
    CHECK(count_events(r.events, "free", "cuMemRelease") == 3);
}

TEST_CASE("an IPC close drops the registrations over the imported range before it returns")
{
    AttributionRun r = run_attribution("ipc");
    const std::string &out = r.run.output;
    // The import is registered twice, once before the close and once after
    // it was imported again at the same address: the second time misses
    // and pins the memory there now.
    CHECK(output_field(out, "reimported_same_address") == 1);
    CHECK(output_field(out, "stale_hits") == 0);
    CHECK(count_events(r.events, "pin", "gdrhook_get") == 2);
    // Each registration of the import was released by its close (and the
    // exporter's pin, made at its allocation, by its free), and the
    // memory was back when the close returned: an open export keeps freed
    // memory in use.
    check_every_pin_released_by_a_free(r.events);
    CHECK(output_field(out, "used_after_close") == 0);
    CHECK(count_events(r.events, "free", "cuIpcCloseMemHandle") == 2);
}
