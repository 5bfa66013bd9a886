// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Graph memory released by the calls that really release it (a trim, the
// destruction of a graph or of an executable graph, a free node), with a
// registration over it: each release is logged and drops the registration,
// whose unpin gives the memory back at once (tests/programs/graph_memory.cpp
// over the fake driver, which releases graph memory as CUDA documents it:
// tests/fake_driver/fake_graph.cpp).
#include "program_runs.h"

#include <regex>

namespace {

constexpr long long graph_bytes = 4 << 20;

struct ModeRun {
    std::vector<EventLine> events;
    std::string output;
};

// The GPU memory the program had in use after `release` (its "after
// RELEASE: mem_used_delta=N" line), or at its end (release empty).
long long used_delta(const std::string &output, const std::string &release = "")
{
    std::smatch m;
    const std::string line = release.empty() ? "(^|\\n)" : "after " + release + ": ";
    INFO("looking for " << line << "mem_used_delta=");
    REQUIRE(std::regex_search(output, m, std::regex(line + "mem_used_delta=(-?[0-9]+)")));
    return std::stoll(m[m.size() - 1]);
}

// Runs a mode plain, then under the shim; returns the hooked run after the
// checks every mode shares.
ModeRun run_mode(const std::string &mode)
{
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult plain = run_test_program("GDRHOOKTEST_GRAPH_MEMORY", {mode}, log, false);
    INFO(plain.output);
    REQUIRE(plain.exit_status == 0);
    RunResult run = run_test_program("GDRHOOKTEST_GRAPH_MEMORY", {mode}, log, true);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    std::vector<EventLine> events = read_recorded_events(log);
    // Every free the program made, logged; a library's registration over
    // graph memory pinned, and released by the release of the memory.
    size_t frees = 0;
    for (const EventLine &e : events)
        frees += e["ev"] == "free" && e.number("rc") == 0;
    CHECK(frees == size_t(output_field(run.output, "frees_made")));
    CHECK(count_events(events, "pin") >= 1);
    check_every_pin_released_by_a_free(events);
    check_no_error_events(events); // verify mode: no stale registration served
    // A dma-buf export holds the memory until it is closed.
    CHECK(used_delta(run.output) == 0);
    return ModeRun{events, run.output};
}

// The `free` event of a graph memory release by `api`.
const EventLine *release_by(const std::vector<EventLine> &events, const std::string &api)
{
    for (const EventLine &e : events)
        if (e["ev"] == "free" && e["api"] == api)
            return &e;
    return nullptr;
}

} // namespace

TEST_CASE("a trim of graph memory is logged and unpins what was registered over it")
{
    ModeRun run = run_mode("trim");
    // Given back at the trim, not at a later destruction.
    CHECK(used_delta(run.output, "trim") == 0);
    const std::vector<EventLine> &events = run.events;
    const EventLine *trim = release_by(events, "cuDeviceGraphMemTrim");
    REQUIRE(trim);
    CHECK((*trim)["kind"] == "graph");
    CHECK(trim->number("dev") == 0);
    CHECK(release_by(events, "cuGraphAddMemFreeNode"));
    const EventLine *exec = release_by(events, "cuGraphExecDestroy");
    REQUIRE(exec);
    CHECK(exec->number("size") == graph_bytes);
}

TEST_CASE("destroying an executable graph gives its memory back: a registration over it is dropped")
{
    ModeRun run = run_mode("executable");
    CHECK(used_delta(run.output, "exec destroy") == 0);
    const std::vector<EventLine> &events = run.events;
    const EventLine *exec = release_by(events, "cuGraphExecDestroy");
    REQUIRE(exec);
    CHECK((*exec)["kind"] == "graph");
    CHECK(exec->number("size") == graph_bytes);
}

TEST_CASE("destroying a graph gives its addresses back: a registration over them is dropped")
{
    std::vector<EventLine> events = run_mode("destroy").events;
    const EventLine *destroyed = release_by(events, "cuGraphDestroy");
    REQUIRE(destroyed);
    CHECK((*destroyed)["kind"] == "graph");
    CHECK(destroyed->number("size") == graph_bytes);
    size_t graph_allocs = 0;
    for (const EventLine &e : events)
        graph_allocs += e["ev"] == "alloc" && e["api"] == "cuGraphAddMemAllocNode" &&
                        e["kind"] == "graph" && e.number("size") == graph_bytes;
    CHECK(graph_allocs == 1);
}

TEST_CASE("a captured graph owns the memory its capture allocated: destroying it releases that")
{
    std::vector<EventLine> events = run_mode("captured").events;
    const EventLine *destroyed = release_by(events, "cuGraphDestroy");
    REQUIRE(destroyed);
    CHECK(destroyed->number("size") == graph_bytes);
}

TEST_CASE("graph memory that outlives its graph stays registered until it is freed")
{
    std::vector<EventLine> events = run_mode("outlives").events;
    const EventLine *destroyed = release_by(events, "cuGraphDestroy");
    REQUIRE(destroyed);
    CHECK(destroyed->number("size") == 0); // the allocation lives on
    // The program registers it before and after the destruction: one pin,
    // kept through it (a dropped registration would be pinned again), and
    // released by the free of its memory.
    CHECK(count_events(events, "pin") == 1);
    CHECK(release_by(events, "cuMemFree_v2"));
}
