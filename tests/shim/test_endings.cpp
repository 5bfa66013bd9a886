// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// However the process ends, every event the shim recorded is in the log:
// exit() runs the shim's exit handler; _exit, _Exit, quick_exit and exec
// run none, and the shim interposes them (hook/process_endings.cpp). Each
// case frees 8 x 50 + 8 pinned buffers just before it ends.
#include "event_lines.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <sys/stat.h>

namespace {

struct LogTally {
    long long allocs = 0, frees = 0, pins = 0, unpins = 0;
    long long pins_at_alloc = 0; // the rest are re-pins by lookups (test_pin_pipeline.cpp)
};

LogTally tally(const std::vector<EventLine> &events)
{
    LogTally t;
    for (const EventLine &e : events) {
        t.allocs += e["ev"] == "alloc";
        t.frees += e["ev"] == "free";
        t.pins += e["ev"] == "pin";
        t.pins_at_alloc += e["ev"] == "pin" && e["api"] != "gdrhook_get";
        t.unpins += e["ev"] == "unpin";
    }
    return t;
}

std::vector<std::string> logs_in(const std::string &dir)
{
    std::vector<std::string> logs;
    for (const auto &entry : std::filesystem::directory_iterator(dir))
        logs.push_back(entry.path().string());
    return logs;
}

} // namespace

TEST_CASE("an ending without exit handlers still writes every free and unpin")
{
    const char *ending = GENERATE("exit", "_exit", "_Exit", "quick_exit", "exec");
    INFO("the program ends with " << ending);
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run = run_program({build_path("GDRHOOKTEST_COHERENCE_CHURN"), ending, "8", "50", "2"},
                                pinning_environment(log));
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    const long long made = output_field(run.output, "frees");
    CHECK(made == 8 * 50 + 8);
    LogTally t = tally(read_event_file(log));
    CHECK(t.frees == made);
    CHECK(t.pins_at_alloc == made); // pin-on-alloc: one pin per buffer freed
    CHECK(t.unpins == t.pins);
}

TEST_CASE("a forked child that ends with _exit writes its log, as with exit")
{
    // 8 children in turn, child k inheriting 3 + k pins, the last recorded
    // just before its fork (tests/programs/coherence_churn.cpp, fork_exit).
    constexpr long long children = 8, first = 4;
    std::string dir = make_temp_dir() + "/fork_exit";
    REQUIRE(mkdir(dir.c_str(), 0755) == 0);
    RunResult run = run_program({build_path("GDRHOOKTEST_COHERENCE_CHURN"), "fork_exit",
                                 std::to_string(first), std::to_string(children), "2"},
                                pinning_environment(dir + "/events.%p.jsonl"));
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "child_status") == 0);
    std::vector<std::string> logs = logs_in(dir);
    REQUIRE(logs.size() == children + 1); // the parent's and each child's
    std::map<long long, LogTally> by_pid;
    for (const std::string &path : logs) {
        std::vector<EventLine> events = read_event_file(path);
        REQUIRE(!events.empty());
        by_pid[events.front().number("pid")] = tally(events);
    }
    // Each process releases every pin it logged; the parent pinned
    // first - 1 + children buffers, and together the children restate
    // every pin they inherited.
    const long long parent_pins = first - 1 + children;
    long long restated = 0;
    for (const auto &[pid, t] : by_pid) {
        INFO("process " << pid);
        CHECK(t.unpins == t.pins);
        if (t.frees > 0) // the parent: it freed the buffers
            CHECK(t.pins == parent_pins);
        else
            restated += t.pins;
    }
    CHECK(restated == children * (first - 1) + children * (children + 1) / 2);
}

TEST_CASE("threads freeing while the main thread calls _exit: what they finished is logged")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run =
        run_program({build_path("GDRHOOKTEST_COHERENCE_CHURN"), "threads_exit", "16", "2000", "2"},
                    pinning_environment(log));
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    const long long finished = output_field(run.output, "frees_before_exit");
    CHECK(finished >= 2000 - 16);
    // Threads go on freeing while the log is written: more may be there.
    CHECK(tally(read_event_file(log)).frees >= finished);
}

TEST_CASE(
    "after _exit or _Exit, another thread's free that returns from the driver is not written, "
    "and no line is cut off")
{
    const char *ending = GENERATE("late_free__exit", "late_free__Exit");
    INFO("the program ends with " << ending);
    const std::string dir = make_temp_dir();
    const std::string log = dir + "/events.jsonl";
    std::map<std::string, std::string> env = pinning_environment(log);
    // After the shim: its _exit and _Exit hand over to the gate once the
    // log is written and closed to other threads.
    env["LD_PRELOAD"] = build_path("GDRHOOKTEST_SHIM") + ":" + build_path("GDRHOOKTEST_EXIT_GATE");
    const int frees = 50;
    RunResult run = run_program(
        {build_path("GDRHOOKTEST_ENDINGS"), ending, std::to_string(frees), dir + "/counts"}, env);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    // The race happened: the free was held in the driver when the process
    // began to end, and went on only after the shim had ended its log.
    REQUIRE(output_field(run.output, "released") == 1);
    // Its thread's event waited for the process to go: the free never
    // returned to the program, and its line is not in the log.
    CHECK(output_field(run.output, "free_returned") == 0);
    LogTally t = tally(read_event_file(log)); // every line whole
    CHECK(t.frees == frees);
    CHECK(t.unpins == t.pins);
    CHECK(t.allocs == frees + 1);
}
