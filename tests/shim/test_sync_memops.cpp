// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// SYNC_MEMOPS is set on memory a library asks to register, never on memory
// the shim pins on its own initiative: a program's allocation pinned at
// allocation keeps the semantics the program gave it until a library's
// gdrhook_get() of it, which sets the attribute once for the pin and
// before it returns (tests/programs/sync_memops.cpp).
#include "program_runs.h"

#include <catch2/catch.hpp>

#include <cerrno>

namespace {

RunResult run_sync_memops(const std::string &pin_mode, const std::vector<std::string> &args = {})
{
    return run_test_program("GDRHOOKTEST_SYNC_MEMOPS", args, make_temp_dir() + "/events.jsonl",
                            true, {{"GDRHOOK_PIN", pin_mode}});
}

} // namespace

TEST_CASE("A pin made at allocation leaves the program's SYNC_MEMOPS as the driver answers it")
{
    RunResult plain =
        run_test_program("GDRHOOKTEST_SYNC_MEMOPS", {}, make_temp_dir() + "/events.jsonl", false);
    INFO(plain.output);
    REQUIRE(plain.exit_status == 0);
    REQUIRE(output_field(plain.output, "alloc_sync") == 0);

    RunResult run = run_sync_memops("alloc");
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "alloc_sync") == 0);
}

TEST_CASE("A library's get leaves SYNC_MEMOPS set before it returns, with one driver call")
{
    // alloc: the first get sets it on the pin made at allocation; demand:
    // the pin the first get makes sets it. The second get sets nothing.
    for (const char *mode : {"alloc", "demand"}) {
        INFO("GDRHOOK_PIN=" << mode);
        RunResult run = run_sync_memops(mode);
        INFO(run.output);
        REQUIRE(run.exit_status == 0);
        REQUIRE(output_field(run.output, "registered") == 1);
        CHECK(output_field(run.output, "alloc_sync") == 0);
        CHECK(output_field(run.output, "first_sync") == 1);
        CHECK(output_field(run.output, "first_sets") == 1);
        CHECK(output_field(run.output, "second_sets") == 0);
    }
}

TEST_CASE("A library's get during a stream capture answers as a pin then does, and sets nothing")
{
    RunResult run = run_sync_memops("alloc", {"capture"});
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "capture_get") == -EOPNOTSUPP);
    CHECK(output_field(run.output, "capture_sets") == 0);
    CHECK(output_field(run.output, "end_capture") == 0); // the capture stays valid
    // Once the capture ended, the next get sets it.
    CHECK(output_field(run.output, "registered") == 1);
    CHECK(output_field(run.output, "first_sync") == 1);
}
