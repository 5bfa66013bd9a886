// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Pins never take the program's descriptors away (issue 39): under
// GDRHOOK_PIN=alloc with the dma-buf backend each pin is an fd, and a
// program holding 1,100 allocations at a soft RLIMIT_NOFILE of 1024
// (tests/programs/many_pins.cpp) must still open its own files as it does
// without the shim. The pins keep within a budget of an eighth of the
// limit (cache/backends/descriptor_budget.h), above the program's low
// numbers; past it the least recently used pin is unpinned first, and the
// log says which (reason fd_budget).
#include "program_runs.h"

namespace {

constexpr long long buffers = 1100;
constexpr long long budget = 1024 / 8;

} // namespace

TEST_CASE("a program holding 1,100 pinned allocations at RLIMIT_NOFILE 1024 still opens its "
          "files")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult plain = run_test_program("GDRHOOKTEST_MANY_PINS", {}, log, false);
    INFO(plain.output);
    REQUIRE(plain.exit_status == 0);
    REQUIRE(output_field(plain.output, "opened") == 512);

    RunResult run = run_test_program("GDRHOOKTEST_MANY_PINS", {}, log, true);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    // Every open the program made without the shim succeeds under it, at
    // the low numbers it got without it.
    CHECK(output_field(run.output, "opened") == 512);
    CHECK(output_field(run.output, "open_errno") == 0);
    CHECK(output_field(run.output, "lowest_fd") == output_field(plain.output, "lowest_fd"));
    // The pins hold at most the budget (and the shim its log and journal).
    CHECK(output_field(run.output, "fds_after_allocs") <=
          output_field(plain.output, "fds_after_allocs") + budget + 4);

    std::vector<EventLine> events = read_recorded_events(log);
    check_no_error_events(events);
    size_t pins = 0, over_budget = 0, skipped = 0;
    for (const EventLine &e : events) {
        pins += e["ev"] == "pin";
        over_budget += e["ev"] == "unpin" && e["reason"] == "fd_budget";
        skipped += e["ev"] == "skip" && e["reason"] == "fd_budget";
    }
    // Each allocation pinned (the one made at the limit too), or said
    // skipped; whatever went past the budget was unpinned to make room,
    // and the log says which.
    CHECK(pins + skipped == buffers + 1);
    CHECK(pins > budget);
    CHECK(over_budget >= pins - budget);
    CHECK(count_events(events, "pin") == count_events(events, "unpin"));

    RunResult check = run_cli({"log", "check", log});
    INFO(check.output);
    CHECK(check.exit_status == 0);
}

TEST_CASE("a program opens as many files under the shim as without it, up to its limit")
{
    // Found by tests/gpu/more_programs/descriptors_near_limit.py on an
    // H200: with 300 pinned allocations at RLIMIT_NOFILE 1024 the program
    // opened 988 files plain and 858 hooked. A descriptor a pin holds
    // below the limit is one the program cannot have.
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult plain = run_test_program("GDRHOOKTEST_MANY_PINS", {}, log, false);
    INFO(plain.output);
    REQUIRE(plain.exit_status == 0);
    RunResult run = run_test_program("GDRHOOKTEST_MANY_PINS", {}, log, true);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    // Our descriptors go above the program's limit where the hard limit
    // leaves room (cache/base/descriptor_room.h): the program opens as
    // many as without us, and no more (its limit is put back).
    if (output_field(plain.output, "hard_limit") < 1024 + 1024 / 4 + 64) {
        WARN("the hard RLIMIT_NOFILE leaves no room above 1024: not checked");
        return;
    }
    CHECK(output_field(run.output, "opened_until_refused") ==
          output_field(plain.output, "opened_until_refused"));
    // The allocation made at the limit was pinned, its export given a
    // number above the limit.
    std::vector<EventLine> events = read_recorded_events(log);
    check_no_error_events(events);
    CHECK(count_events(events, "pin") == buffers + 1);
}
