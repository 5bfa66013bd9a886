// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Issue 23: whatever the shim's dlsym answers for an interposed function is
// on the program's call path. tests/programs/patched_frees runs with a
// library that, like UCX's CUDA module in bistro mode, patches the functions
// dlsym on its own handle returns (tests/programs/bistro_patcher.cpp), and
// frees through the exported symbols, its own dlsym answers and
// cuGetProcAddress_v2. The patcher's spies must see every call, its cache
// must never be stale, and the shim must log every allocation and free
// exactly once, with pin-on-alloc lookups never stale either.
#include "event_lines.h"

#include <catch2/catch.hpp>

#include <map>

namespace {

const char *const paths[] = {"symbol", "dlsym", "proc"};

// The patched functions whose calls the shim logs, with the event they make.
const std::pair<const char *, const char *> logged[] = {
    {"cuMemFree", "free"},        {"cuMemAlloc", "alloc"},        {"cuMemFree_v2", "free"},
    {"cuMemFreeAsync", "free"},   {"cuMemFreeHost", "free"},      {"cuMemUnmap", "free"},
    {"cuMemRelease", "free"},     {"cuMemAddressFree", "free"},   {"cuMemAlloc_v2", "alloc"},
    {"cuMemAllocAsync", "alloc"}, {"cuMemAllocHost_v2", "alloc"}, {"cuMemCreate", "alloc"},
    {"cuMemMap", "alloc"},
};

RunResult run_patched(std::map<std::string, std::string> env)
{
    return run_program(
        {build_path("GDRHOOKTEST_PATCHED_FREES"), build_path("GDRHOOKTEST_BISTRO_PATCHER")}, env);
}

void check_spy_saw_everything(const RunResult &run)
{
    CHECK(output_field(run.output, "installed") == 13);
    for (const char *path : paths) {
        INFO("resolution path " << path);
        CHECK(output_field(run.output, std::string("missed.") + path) == 0);
        CHECK(output_field(run.output, std::string("spy_stale.") + path) == 0);
    }
    CHECK(output_field(run.output, "lookups") > 0);
}

// The shim logged each call exactly once and no lookup was stale.
void check_shim_logged_everything(const RunResult &run, const std::string &log)
{
    for (const char *path : paths) {
        INFO("resolution path " << path);
        CHECK(output_field(run.output, std::string("gdrhook_stale.") + path) == 0);
    }
    std::map<std::string, long long> events_of;
    for (const EventLine &e : read_event_file(log)) {
        if (e["ev"] != "free" && e["ev"] != "alloc")
            continue;
        ++events_of[e["ev"] + " " + e["api"]];
        INFO(e["ev"] << " " << e["api"] << " at " << e["addr"]);
        CHECK(e.number("rc") == 0);
    }
    for (const auto &[api, ev] : logged) {
        INFO(api);
        long long made = output_field(run.output, std::string("made.") + api);
        CHECK(made > 0);
        CHECK(events_of[std::string(ev) + " " + api] == made);
    }
}

// Runs the program under `preload` (the shim first or last) with
// pin-on-alloc and checks both the patcher's view and the shim's log.
void check_under_shim(const std::string &preload, std::map<std::string, std::string> extra = {})
{
    std::string log = make_temp_dir() + "/events.jsonl";
    auto env = pinning_environment(log);
    env["LD_PRELOAD"] = preload;
    env.insert(extra.begin(), extra.end());
    RunResult run = run_patched(env);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    check_spy_saw_everything(run);
    if (!extra.count("GDRHOOK_DISABLE"))
        check_shim_logged_everything(run, log);
}

std::string shim()
{
    return build_path("GDRHOOKTEST_SHIM");
}

std::string patcher()
{
    return build_path("GDRHOOKTEST_BISTRO_PATCHER");
}

} // namespace

TEST_CASE("without the shim the patcher sees every call (the test's control)")
{
    RunResult run = run_patched({{"LD_LIBRARY_PATH", build_path("GDRHOOKTEST_FAKE_DRIVER_DIR")}});
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    check_spy_saw_everything(run);
}

TEST_CASE(
    "a patcher dlopen()ed as UCX loads its CUDA module sees every call; the shim logs each once")
{
    check_under_shim(shim());
}

TEST_CASE("a patcher preloaded after the shim sees every call; the shim logs each once")
{
    check_under_shim(shim() + " " + patcher());
}

TEST_CASE("a patcher preloaded before the shim sees every call; the shim logs each once")
{
    check_under_shim(patcher() + " " + shim());
}

TEST_CASE("a patcher writing 5-byte relative jumps sees every call; the shim logs each once")
{
    check_under_shim(shim(), {{"BISTRO_JUMP", "5"}});
}

TEST_CASE("with GDRHOOK_DISABLE=1 the patcher patches the driver and sees every call")
{
    check_under_shim(shim(), {{"GDRHOOK_DISABLE", "1"}});
}
