// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Pointer queries answered from the shim's table: the same answers as the
// driver's at every step of every kind of memory's life, through every way
// a program finds the functions; the driver asked once per allocation and
// attribute; no answer about memory whose free returned before the query
// began (tests/programs/pointer_queries.cpp).
#include "program_runs.h"

#include <catch2/catch.hpp>

#include <regex>

namespace {

// From the shim's statistics at exit: the last process's (a forked child
// ends before its parent).
long long answered(const std::string &output)
{
    const std::regex said("pointer queries: ([0-9]+) answered");
    long long last = -1;
    for (auto it = std::sregex_iterator(output.begin(), output.end(), said);
         it != std::sregex_iterator(); ++it)
        last = std::stoll((*it)[1]);
    REQUIRE(last >= 0);
    return last;
}

RunResult run_pointer_queries(const std::vector<std::string> &args,
                              const std::map<std::string, std::string> &extra = {},
                              const std::string &log = make_temp_dir() + "/events.jsonl")
{
    std::map<std::string, std::string> env = {
        {"GDRHOOK_PIN", "off"}, {"GDRHOOK_LOG_LEVEL", "info"}, {"GDRHOOK_VERIFY", "0"}};
    for (const auto &entry : extra)
        env[entry.first] = entry.second;
    return run_test_program("GDRHOOKTEST_POINTER_QUERIES", args, log, true, env);
}

} // namespace

TEST_CASE("Pointer queries answer what the driver answers over every kind of memory's life")
{
    for (const char *path : {"symbol", "dlsym", "proc"}) {
        INFO("path: " << path);
        RunResult run = run_pointer_queries({"life", path});
        INFO(run.output);
        REQUIRE(run.exit_status == 0);
        CHECK(output_field(run.output, "checked") > 100);
        CHECK(output_field(run.output, "mismatches") == 0);
        CHECK(answered(run.output) > 0);
    }
}

TEST_CASE("Pointer queries ask the driver once per allocation and attribute")
{
    RunResult run = run_pointer_queries({"repeat"});
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "most_driver_queries") == 1);
    // 70 single queries (7 the driver answered) and 10 of seven at once.
    CHECK(run.output.find("pointer queries: 73 answered, 7 forwarded") != std::string::npos);
}

TEST_CASE("Every query of memory the shim did not see allocated (an IPC import) reaches the driver")
{
    RunResult run = run_pointer_queries({"imported"});
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "fewest_driver_queries") == 10);
}

TEST_CASE("A query the table cannot answer costs the driver the program's call, once it knows")
{
    RunResult run = run_pointer_queries({"untracked"});
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "forwarded_differ") == 0);
    // One range asked per pointer, at its first query: a host buffer the
    // driver knows nothing of, an allocation the shim did not see made.
    CHECK(output_field(run.output, "host_range_calls") <= 1);
    CHECK(output_field(run.output, "import_range_calls") <= 1);
    // An allocation the shim saw made at the import's old address: the
    // table's, learnt at its first query.
    REQUIRE(output_field(run.output, "reused_same_address") == 1);
    CHECK(output_field(run.output, "reused_driver_queries") == 1);
}

TEST_CASE("The log's queries line and log summary count the queries answered and forwarded")
{
    const std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run = run_pointer_queries({"repeat"}, {}, log);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    std::vector<EventLine> lines;
    for (const EventLine &e : read_event_file(log))
        if (e["ev"] == "queries")
            lines.push_back(e);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]["answered"] == "73");
    CHECK(lines[0]["forwarded"] == "7");
    RunResult summary = run_cli({"log", "summary", log});
    INFO(summary.output);
    CHECK(summary.output.find("pointer queries  73 answered, 7 forwarded") != std::string::npos);
}

TEST_CASE("GDRHOOK_VERIFY=1 logs an answer that differs from the driver's, which the program gets")
{
    const std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run = run_pointer_queries({"verify"}, {{"GDRHOOK_VERIFY", "1"}}, log);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "got_new") == 1);
    CHECK(run.output.find("verify: 2 checked, 1 differed") != std::string::npos);
    size_t logged = 0;
    for (const EventLine &e : read_event_file(log))
        logged += e["ev"] == "error" && e["msg"].rfind("verify: a pointer query", 0) == 0;
    CHECK(logged == 1);
}

TEST_CASE("Pointer queries all go to the driver with GDRHOOK_POINTER_QUERIES=off")
{
    RunResult run = run_pointer_queries({"repeat"}, {{"GDRHOOK_POINTER_QUERIES", "off"}});
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "most_driver_queries") == 20);
    CHECK(run.output.find("pointer queries: 0 answered, 80 forwarded") != std::string::npos);
}

TEST_CASE("A driver answer about memory freed and made again meanwhile is not kept")
{
    RunResult run = run_pointer_queries({"interleave"});
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    REQUIRE(output_field(run.output, "reused") == 1); // the same address again
    CHECK(output_field(run.output, "stale") == 0);
}

TEST_CASE("A pointer query after a free returned never answers the freed allocation's id")
{
    for (int round = 0; round < 3; ++round) {
        RunResult run = run_pointer_queries({"race"});
        INFO(run.output);
        REQUIRE(run.exit_status == 0);
        CHECK(output_field(run.output, "stale") == 0);
        CHECK(answered(run.output) > 0); // the race is between answers and frees
    }
}
