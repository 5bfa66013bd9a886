// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// GDRHOOK_PROFILE=1 through the shim: the pair's paths are compiled twice
// (cache/record/recorder.cpp), and a profiled process must run the copy
// with the timers, every part of an allocation and a free counted; a
// process without the profile prints none.
#include "program_runs.h"

#include <regex>

namespace {

// The count of `part`'s profile line in `output`, or -1 when it has none.
long long profiled_count(const std::string &output, const std::string &part)
{
    std::smatch found;
    const std::regex line("profile: " + part + " n=([0-9]+) ");
    return std::regex_search(output, found, line) ? std::stoll(found[1]) : -1;
}

} // namespace

TEST_CASE("a profiled process times every part of its allocations and frees")
{
    const RunResult run = run_demo({{"GDRHOOK_PROFILE", "1"}}).run;
    INFO(run.output);
    for (const char *part : {"pair_clock", "pair_tracker", "pair_context", "pair_push",
                             "pair_alloc_listeners", "free_before_real", "free_after_real"}) {
        INFO(part);
        CHECK(profiled_count(run.output, part) > 0);
    }
    // Every allocation and every free makes its event, and is timed
    // making it.
    CHECK(profiled_count(run.output, "pair_clock") >=
          profiled_count(run.output, "pair_context") +
              profiled_count(run.output, "free_before_real"));
}

TEST_CASE("a process without the profile prints none")
{
    const RunResult run = run_demo().run;
    INFO(run.output);
    CHECK(run.output.find("profile: ") == std::string::npos);
}
