// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Running a test program plain and under the shim with pin-on-alloc over
// the fake driver, and the checks each such run shares: the program
// never notices the shim, nothing pinned is left to the exit.
#pragma once

#include "event_lines.h"

#include <catch2/catch.hpp>

// Runs the program named by `program_variable` (a build path) with args:
// under the shim with its log at `log`, or plain (shim false); `extra`
// is added to the environment either way.
inline RunResult run_test_program(const char *program_variable,
                                  const std::vector<std::string> &args, const std::string &log,
                                  bool shim, const std::map<std::string, std::string> &extra = {})
{
    std::vector<std::string> argv = {build_path(program_variable)};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> env = pinning_environment(log);
    if (!shim) {
        env.erase("LD_PRELOAD");
        env.erase("GDRHOOK_EVENTS");
    }
    for (const auto &entry : extra)
        env[entry.first] = entry.second;
    return run_program(argv, env);
}

inline size_t count_events(const std::vector<EventLine> &events, const std::string &ev,
                           const std::string &api = "")
{
    size_t n = 0;
    for (const EventLine &e : events)
        if (e["ev"] == ev && (api.empty() || e["api"] == api))
            ++n;
    return n;
}

inline void check_no_error_events(const std::vector<EventLine> &events)
{
    for (const EventLine &e : events)
        if (e["ev"] == "error")
            FAIL_CHECK("error event: " << e["msg"]);
}

// Every pin ends in an unpin that a release of its memory caused, none
// left to the exit's teardown.
inline void check_every_pin_released_by_a_free(const std::vector<EventLine> &events)
{
    CHECK(count_events(events, "pin") == count_events(events, "unpin"));
    for (const EventLine &e : events)
        if (e["ev"] == "unpin")
            CHECK(e["reason"] == "invalidated");
}

// A program (by its build path's variable) under the shim with
// pin-on-alloc, its log in a new folder; `extra` is added to the
// environment. It must exit 0, log no error, and release every pin by a
// free.
struct CheckedRun {
    RunResult run;
    std::vector<EventLine> events;
};

inline CheckedRun run_checked(const char *program_variable,
                              const std::map<std::string, std::string> &extra = {})
{
    const std::string log = make_temp_dir() + "/events.jsonl";
    CheckedRun checked;
    checked.run = run_test_program(program_variable, {}, log, true, extra);
    INFO(checked.run.output);
    REQUIRE(checked.run.exit_status == 0);
    checked.events = read_recorded_events(log);
    check_no_error_events(checked.events);
    check_every_pin_released_by_a_free(checked.events);
    return checked;
}

// The README's demo, so run.
inline CheckedRun run_demo(const std::map<std::string, std::string> &extra = {})
{
    return run_checked("GDRHOOKTEST_DEMO", extra);
}

// The gdrhook CLI with `args` (GDRHOOKTEST_CLI, a build path).
inline RunResult run_cli(const std::vector<std::string> &args)
{
    std::vector<std::string> argv = {build_path("GDRHOOKTEST_CLI")};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_program(argv, {});
}
