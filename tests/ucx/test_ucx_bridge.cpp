// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The UCX bridge against UCX's own registration cache (Debian's libucx,
// through tests/ucx/ucx_rcache.cpp under the shim over the fake driver):
// with the bridge, every free path drops the cache's region before the
// real free runs and no lookup is stale; with GDRHOOK_UCX=off, UCX alone
// serves a stale registration after each path. The counts of both runs are
// printed, one line per path. Then where the bridge finds libucm, and
// GDRHOOK_UCX=on where libucm cannot be loaded: one warning, the program
// otherwise as without the bridge.
#include "event_lines.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <regex>

namespace {

const char *const free_paths[] = {"cuMemFree_v2",    "cuMemFreeAsync", "cuMemUnmap+cuMemRelease",
                                  "cuMemPoolTrimTo", "cuCtxDestroy",   "cuDeviceGraphMemTrim",
                                  "cuGraphDestroy"};

// A trim unmaps graph memory, and the next launch maps it again at the
// same address: one allocation (node) for both rounds, and the fake
// driver keeps its buffer ID, so a stale region does not show in it.
bool one_allocation_for_both_rounds(const std::string &path)
{
    return path == "cuDeviceGraphMemTrim";
}

// A graph made again at a destroyed graph's address: its free node, a
// free the shim tells UCX of as it is made, names the range once more
// while UCX still lists the region it dropped (it deregisters it at its
// next operation). That event comes after the memory went; the others
// came before.
bool graph_made_again_at_the_address(const std::string &path)
{
    return path == "cuGraphDestroy";
}

struct Run {
    std::string output;
    std::vector<EventLine> events;
};

Run run_rcache(const std::string &ucx_setting)
{
    const std::string log = make_temp_dir() + "/events.jsonl";
    std::map<std::string, std::string> env = pinning_environment(log);
    if (!ucx_setting.empty())
        env["GDRHOOK_UCX"] = ucx_setting;
    RunResult run = run_program({build_path("GDRHOOKTEST_UCX_RCACHE")}, env);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    printf("--- ucx_rcache, GDRHOOK_UCX=%s\n%s",
           ucx_setting.empty() ? "(unset)" : ucx_setting.c_str(), run.output.c_str());
    return Run{run.output, read_recorded_events(log)};
}

// The path's line of the program's output.
std::string line_of(const std::string &output, const std::string &path)
{
    std::smatch m;
    INFO("path " << path);
    REQUIRE(std::regex_search(
        output, m,
        std::regex("path=" + std::regex_replace(path, std::regex("\\+"), "\\+") + " [^\n]*")));
    return m[0];
}

void check_no_error_events(const std::vector<EventLine> &events)
{
    for (const EventLine &e : events)
        if (e["ev"] == "error")
            FAIL_CHECK("error event: " << e["msg"]);
}

} // namespace

TEST_CASE(
    "with the bridge, UCX's cache drops each freed region before the real free and is never stale")
{
    // auto: the program links libucs, so libucm is loaded at the first
    // CUDA call; on: the same, asked for.
    for (const char *setting : {"", "on"}) {
        Run run = run_rcache(setting);
        INFO("GDRHOOK_UCX=" << setting << "\n" << run.output);
        for (const char *path : free_paths) {
            const std::string line = line_of(run.output, path);
            INFO(line);
            CHECK(output_field(line, "same_address") == 1);
            // A free event over the registered region, dispatched while the
            // driver still held the buffer (before the real free), after the
            // cache had taken the region out of its page table.
            const long long events = output_field(line, "free_events");
            CHECK(events >= 1);
            if (graph_made_again_at_the_address(path))
                CHECK(output_field(line, "allocated_at_event") == output_field(line, "registered"));
            else
                CHECK(output_field(line, "allocated_at_event") == events);
            CHECK(output_field(line, "out_of_cache_at_event") == events);
            CHECK(output_field(line, "stale_hits") == 0);
            // UCX deregisters a region it dropped at its next operation
            // (its garbage list), here the lookup after the new allocation.
            CHECK(output_field(line, "dereg_after_lookup") == 1);
            CHECK(output_field(line, "alloc_events") >=
                  (one_allocation_for_both_rounds(path) ? 1 : 2));
        }
        CHECK(output_field(run.output, "stale_hits_total") == 0);
        // The handler freed CUDA memory from inside the first free event:
        // that free dispatched nothing more on its thread.
        CHECK(output_field(run.output, "scratch_freed") == 1);
        CHECK(output_field(run.output, "nested_events") == 0);
        check_no_error_events(run.events);
    }
}

TEST_CASE("with GDRHOOK_UCX=off, UCX's cache serves a stale registration after every free path")
{
    Run run = run_rcache("off");
    for (const char *path : free_paths) {
        const std::string line = line_of(run.output, path);
        INFO(line);
        CHECK(output_field(line, "same_address") == 1);
        CHECK(output_field(line, "free_events") == 0);
        CHECK(output_field(line, "alloc_events") == 0);
        if (!one_allocation_for_both_rounds(path))
            CHECK(output_field(line, "stale_hits") > 0);
    }
    check_no_error_events(run.events);
}

namespace {

RunResult run_ucm_loading(const std::string &mode, const std::string &ucx_setting)
{
    const std::string log = make_temp_dir() + "/events.jsonl";
    std::map<std::string, std::string> env = pinning_environment(log);
    env["GDRHOOK_UCX"] = ucx_setting;
    RunResult run = run_program({build_path("GDRHOOKTEST_UCM_LOADING"), mode}, env);
    INFO("GDRHOOK_UCX=" << ucx_setting << "\n" << run.output);
    REQUIRE(run.exit_status == 0);
    check_no_error_events(read_recorded_events(log));
    return run;
}

} // namespace

TEST_CASE("GDRHOOK_UCX=on loads libucm at the first CUDA call, and UCX hears of frees from then on")
{
    // The baseline: the program does not link UCX, and auto loads nothing.
    RunResult plain = run_ucm_loading("first_call", "auto");
    CHECK(output_field(plain.output, "libucm_loaded") == 0);
    RunResult on = run_ucm_loading("first_call", "on");
    INFO(on.output);
    CHECK(output_field(on.output, "libucm_loaded") == 1);
    CHECK(output_field(on.output, "free_events") == 1);
}

TEST_CASE("a libucm loaded after the first CUDA call is found at the next dlsym of a CUDA name")
{
    RunResult run = run_ucm_loading("late", "auto");
    INFO(run.output);
    CHECK(output_field(run.output, "libucm_loaded") == 0);
    // Before the lookup the bridge has not looked again (the README says
    // so); after it, UCX hears of the free, once.
    CHECK(output_field(run.output, "free_events_before_lookup") == 0);
    CHECK(output_field(run.output, "free_events_after_lookup") == 1);
}

TEST_CASE("UCX hears of an allocation before gdrhook pins it, and of a free after gdrhook unpinned")
{
    // The subscribers' orders (cache/core/subscriber_order.cpp) as a
    // library meets them: its UCX handler reads gdrhook's counters. An
    // allocation reaches UCX, then pin-on-alloc; a free reaches the
    // registration cache, which unpins, then UCX.
    RunResult run = run_ucm_loading("order", "on");
    INFO(run.output);
    const long long rounds = output_field(run.output, "rounds");
    REQUIRE(rounds > 0);
    CHECK(output_field(run.output, "alloc_heard") == rounds);
    CHECK(output_field(run.output, "pinned_when_ucx_heard") == 0);
    CHECK(output_field(run.output, "pinned_by_return") == rounds);
    CHECK(output_field(run.output, "free_heard") == rounds);
    CHECK(output_field(run.output, "unpinned_when_ucx_heard") == rounds);
}

TEST_CASE("GDRHOOK_UCX=on where libucm cannot be loaded warns once and changes nothing else")
{
    // A libucm.so.0 the loader finds first and cannot load (an empty file:
    // "file too short"), as on a node whose UCX is broken or half there.
    const std::string dir = make_temp_dir();
    FILE *broken = std::fopen((dir + "/libucm.so.0").c_str(), "w");
    REQUIRE(broken);
    std::fclose(broken);
    std::map<std::string, std::string> env = pinning_environment(dir + "/events.jsonl");
    env["LD_LIBRARY_PATH"] = dir + ":" + env["LD_LIBRARY_PATH"];
    env["GDRHOOK_UCX"] = "auto"; // the program as it runs without the bridge
    const SplitRunResult plain =
        run_program_apart({build_path("GDRHOOKTEST_UCM_LOADING"), "first_call"}, env);
    env["GDRHOOK_UCX"] = "on";
    const SplitRunResult on =
        run_program_apart({build_path("GDRHOOKTEST_UCM_LOADING"), "first_call"}, env);
    INFO("stdout: " << on.out << "\nstderr: " << on.err);
    CHECK(on.exit_status == plain.exit_status);
    CHECK(on.out == plain.out);
    CHECK(output_field(on.out, "libucm_loaded") == 0);
    // One line, naming the setting, the library and the loader's reason.
    CHECK(lines_with(on.err, "GDRHOOK_UCX=on") == 1);
    CHECK(lines_with(on.err, "] warning: GDRHOOK_UCX=on: " + dir +
                                 "/libucm.so.0: file too short; UCX is not told of CUDA frees") ==
          1);
    CHECK(lines_with(plain.err, "GDRHOOK_UCX") == 0);
}
