// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// End to end through the loader: tests/programs/free_paths runs under
// LD_PRELOAD=libgdrhook.so against the fake driver, once per resolution
// path, and the event log must list exactly the allocations and frees the
// program made, in order, with sizes, results and the path they came by.
#include "event_lines.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <dirent.h>
#include <set>
#include <unistd.h>

namespace {

struct Expected {
    const char *ev;
    const char *api;
    long long size;
    int rc;
    int dev;          // -1: not known to be one device's memory
    const char *kind; // "": the event has no kind
};

// What tests/programs/free_paths.cpp's exercise() does, event by event; the
// program prints the address each event must carry.
const Expected exercise_events[] = {
    {"alloc", "cuMemAlloc_v2", 1 << 20, 0, 0, "device"},
    {"free", "cuMemFree_v2", 1 << 20, 0, 0, "device"},
    {"alloc", "cuMemAlloc_v2", 1 << 20, 0, 0, "device"},
    {"free", "cuMemFree_v2", 1 << 20, 0, 0, "device"},
    {"alloc", "cuMemAllocPitch_v2", 10240, 0, 0, "pitch"},
    {"free", "cuMemFree_v2", 10240, 0, 0, "pitch"},
    {"alloc", "cuMemAllocAsync", 4096, 0, 0, "pool"},
    {"free", "cuMemFreeAsync", 4096, 0, 0, "pool"},
    {"alloc", "cuMemAllocAsync_ptsz", 4096, 0, 0, "pool"},
    {"free", "cuMemFreeAsync_ptsz", 4096, 0, 0, "pool"},
    {"alloc", "cuMemAllocFromPoolAsync", 8192, 0, 0, "pool"},
    {"free", "cuMemFreeAsync", 8192, 0, 0, "pool"},
    {"free", "cuMemPoolTrimTo", 0, 0, -1, ""},
    {"free", "cuMemPoolDestroy", 0, 0, -1, ""},
    {"alloc", "cuMemAllocManaged", 8192, 0, 0, "managed"},
    {"free", "cuMemFree_v2", 8192, 0, 0, "managed"},
    {"alloc", "cuMemAllocHost_v2", 4096, 0, 0, "host"},
    {"free", "cuMemFreeHost", 4096, 0, 0, "host"},
    {"alloc", "cuMemHostAlloc", 4096, 0, 0, "host"},
    {"free", "cuMemFreeHost", 4096, 0, 0, "host"},
    {"alloc", "cuMemHostRegister_v2", 8192, 0, 0, "host_registered"},
    {"free", "cuMemHostUnregister", 8192, 0, 0, "host_registered"},
    {"alloc", "cuMemCreate", 2 << 20, 0, 0, "vmm_physical"},
    {"alloc", "cuMemMap", 2 << 20, 0, 0, "vmm"},
    {"free", "cuMemUnmap", 2 << 20, 0, 0, "vmm"},
    {"free", "cuMemRelease", 2 << 20, 0, 0, "vmm_physical"},
    {"free", "cuMemAddressFree", 2 << 20, 0, -1, ""},
    {"alloc", "cuMemAlloc_v2", 65536, 0, 0, "device"},
    {"alloc", "cuIpcOpenMemHandle_v2", 65536, 0, 0, "ipc"},
    {"free", "cuIpcCloseMemHandle", 65536, 0, 0, "ipc"},
    {"free", "cuMemFree_v2", 65536, 0, 0, "device"},
    // refused by the driver (CUDA_ERROR_INVALID_VALUE): nothing known of it
    {"free", "cuMemFree_v2", 0, 1, -1, "device"},
    {"alloc", "cuMemAlloc", 4096, 0, 0, "device"},
    {"free", "cuMemFree", 4096, 0, 0, "device"},
    {"alloc", "cuMemAllocPitch", 10240, 0, 0, "pitch"},
    {"free", "cuMemFree", 10240, 0, 0, "pitch"},
    {"alloc", "cuMemAllocHost", 4096, 0, 0, "host"},
    {"free", "cuMemFreeHost", 4096, 0, 0, "host"},
    {"alloc", "cuMemAlloc_v2", 65536, 0, 0, "device"},
    {"ctx_destroy", "cuCtxDestroy_v2", 65536, 0, -1, ""},
    {"alloc", "cuMemAlloc_v2", 131072, 0, 0, "device"},
    {"ctx_destroy", "cuDevicePrimaryCtxRelease_v2", 131072, 0, 0, ""},
};

// The addresses the program printed as `logged_addr=`, in order.
std::vector<std::string> logged_addresses(const std::string &output)
{
    std::vector<std::string> addresses;
    const std::string key = "logged_addr=";
    for (size_t at = output.find(key); at != std::string::npos; at = output.find(key, at + 1)) {
        size_t start = at + key.size();
        addresses.push_back(output.substr(start, output.find('\n', start) - start));
    }
    return addresses;
}

std::map<std::string, std::string> shim_environment(const std::string &events)
{
    return {
        {"LD_PRELOAD", build_path("GDRHOOKTEST_SHIM")},
        {"LD_LIBRARY_PATH", build_path("GDRHOOKTEST_FAKE_DRIVER_DIR")},
        {"GDRHOOK_EVENTS", events},
    };
}

RunResult run_free_paths(const std::string &mode, std::map<std::string, std::string> env)
{
    return run_program({build_path("GDRHOOKTEST_FREE_PATHS"), mode}, env);
}

// Events of one thread appear in the order that thread recorded them.
void check_in_order(const std::vector<EventLine> &events)
{
    std::map<std::string, long long> last_seq;
    for (const EventLine &e : events) {
        auto it = last_seq.find(e["tid"]);
        if (it != last_seq.end())
            REQUIRE(e.number("seq") > it->second);
        last_seq[e["tid"]] = e.number("seq");
    }
}

// Runs `mode` with `preload` (the shim, perhaps with another interposer)
// and checks the shim's log event by event; returns the run.
RunResult check_exercise(const std::string &mode, const std::string &via,
                         const std::string &preload = build_path("GDRHOOKTEST_SHIM"),
                         const std::map<std::string, std::string> &extra = {})
{
    std::string dir = make_temp_dir();
    std::string log = dir + "/events.jsonl";
    auto env = shim_environment(log);
    env["LD_PRELOAD"] = preload;
    env.insert(extra.begin(), extra.end());
    RunResult run = run_free_paths(mode, env);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);

    std::vector<EventLine> events = read_recorded_events(log);
    std::vector<std::string> addresses = logged_addresses(run.output);
    REQUIRE(events.size() == std::size(exercise_events));
    REQUIRE(addresses.size() == events.size());
    check_in_order(events);
    for (size_t i = 0; i < events.size(); ++i) {
        const EventLine &e = events[i];
        const Expected &x = exercise_events[i];
        INFO("event " << i << ": " << e["ev"] << " " << e["api"]);
        CHECK(e["ev"] == x.ev);
        CHECK(e["api"] == x.api);
        CHECK(e["addr"] == addresses[i]);
        CHECK(e.number("size") == x.size);
        CHECK(e.number("rc") == x.rc);
        CHECK(e.number("dev") == x.dev);
        CHECK((e.has("kind") ? e["kind"] : std::string()) == x.kind);
        CHECK(e["via"] == via);
        CHECK(e.has("ts_ns"));
        CHECK(e.has("pid"));
        CHECK(e.has("tid"));
    }
    // The reallocation returned the freed address: the log shows it twice.
    CHECK(events[0]["addr"] == events[2]["addr"]);
    return run;
}

// The interposer of tests/programs/next_spy.cpp saw every call that reached
// the driver's interposed entry points.
void check_spy_saw_everything(const RunResult &run)
{
    INFO(run.output);
    CHECK(output_field(run.output, "next_spy_missed") == 0);
    CHECK(output_field(run.output, "next_spy.cuMemFree_v2") > 0);
}

} // namespace

TEST_CASE("frees through the exported symbols are logged exactly once, in order")
{
    check_exercise("symbol", "symbol");
}

TEST_CASE("frees through functions found with dlsym are logged exactly once, in order")
{
    // dlsym hands out the exported wrappers themselves (docs/interposition.md), so these
    // calls are the exported symbols' calls.
    check_exercise("dlsym", "symbol");
}

TEST_CASE("frees through cuGetProcAddress_v2, itself obtained from cuGetProcAddress, are logged")
{
    check_exercise("proc", "cuGetProcAddress");
}

TEST_CASE("frees through the older cuGetProcAddress are logged")
{
    check_exercise("proc_v1", "cuGetProcAddress");
}

TEST_CASE("frees through cudaGetDriverEntryPointByVersion are logged")
{
    check_exercise("runtime_entry", "cudaGetDriverEntryPoint");
}

// Runs the runtime mode under `preload` and checks the shim's events.
static RunResult check_runtime_frees(const std::string &preload)
{
    std::string log = make_temp_dir() + "/events.jsonl";
    auto env = shim_environment(log);
    env["LD_PRELOAD"] = preload;
    RunResult run = run_free_paths("runtime", env);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    std::vector<EventLine> events = read_recorded_events(log);
    std::vector<std::pair<std::string, std::string>> seen;
    for (const EventLine &e : events)
        seen.emplace_back(e["ev"], e["api"]);
    std::vector<std::pair<std::string, std::string>> expected = {
        {"alloc", "cuMemAlloc_v2"},     {"free", "cuMemFree_v2"},
        {"alloc", "cuMemAlloc_v2"},     {"free", "cuMemFree_v2"},
        {"alloc", "cuMemAlloc_v2"},     {"free", "cuMemFree_v2"},
        {"alloc", "cuMemAllocAsync"},   {"free", "cuMemFreeAsync"},
        {"alloc", "cuMemAllocHost_v2"}, {"free", "cuMemFreeHost"},
        {"alloc", "cuMemAlloc_v2"},     {"ctx_destroy", "cuDevicePrimaryCtxReset_v2"},
    };
    CHECK(seen == expected);
    check_in_order(events);
    return run;
}

TEST_CASE("runtime frees produce one event each, none for cudaFree(nullptr)")
{
    check_runtime_frees(build_path("GDRHOOKTEST_SHIM"));
}

TEST_CASE("an interposer after the shim sees the runtime's frees and the driver calls behind them")
{
    RunResult run = check_runtime_frees(build_path("GDRHOOKTEST_SHIM") + " " +
                                        build_path("GDRHOOKTEST_NEXT_SPY"));
    check_spy_saw_everything(run);
    CHECK(output_field(run.output, "next_spy.cudaFree") == 4);
    CHECK(output_field(run.output, "next_spy.cudaFreeAsync") == 1);
    CHECK(output_field(run.output, "next_spy.cudaFreeHost") == 1);
    CHECK(output_field(run.output, "next_spy.cudaDeviceReset") == 1);
}

static void check_threads(const std::string &capacity)
{
    std::string log = make_temp_dir() + "/events.jsonl";
    auto env = shim_environment(log);
    env["GDRHOOK_QUEUE_CAPACITY"] = capacity;
    env["GDRHOOK_LOG_LEVEL"] = "info";
    RunResult run = run_free_paths("threads", env);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    std::vector<EventLine> events = read_recorded_events(log);
    size_t allocs = 0, frees = 0;
    std::set<long long> seqs;
    std::map<std::string, long long> live; // addr -> size, per thread order
    for (const EventLine &e : events) {
        seqs.insert(e.number("seq"));
        if (e["ev"] == "alloc")
            ++allocs;
        if (e["ev"] == "free") {
            ++frees;
            CHECK(e.number("rc") == 0);
            CHECK(e.number("size") >= 4096);
        }
    }
    CHECK(allocs == 8000);
    CHECK(frees == 8000);
    CHECK(seqs.size() == events.size()); // no event twice
    check_in_order(events);
}

TEST_CASE("8 threads x 1000 alloc/free pairs: every event logged once")
{
    check_threads("4096");
}

TEST_CASE("a queue of capacity 2 overflows into the producers and loses nothing")
{
    check_threads("2");
}

TEST_CASE("after fork both processes log their own events, none twice")
{
    std::string dir = make_temp_dir();
    RunResult run = run_free_paths("fork", shim_environment(dir + "/events.%p.jsonl"));
    INFO(run.output);
    REQUIRE(run.exit_status == 0);

    std::vector<std::string> files;
    DIR *d = opendir(dir.c_str());
    while (dirent *entry = readdir(d))
        if (entry->d_name[0] != '.')
            files.push_back(dir + "/" + entry->d_name);
    closedir(d);
    REQUIRE(files.size() == 2);

    std::vector<size_t> sizes;
    for (const std::string &file : files) {
        std::vector<EventLine> events = read_recorded_events(file);
        std::set<std::string> pids;
        for (const EventLine &e : events)
            pids.insert(e["pid"]);
        CHECK(pids.size() == 1); // each file holds one process's events
        sizes.push_back(events.size());
        if (events.size() == 4) // the child's: each with the driver's refusal
            for (const EventLine &e : events)
                CHECK(e.number("rc") == 3); // CUDA_ERROR_NOT_INITIALIZED
    }
    std::sort(sizes.begin(), sizes.end());
    CHECK(sizes[0] == 4);   // the child: 3 allocations and a free, refused
    CHECK(sizes[1] == 402); // the parent: 1 + 200 pairs + 1
}

TEST_CASE("GDRHOOK_DISABLE=1 passes everything through and logs nothing")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    auto env = shim_environment(log);
    env["GDRHOOK_DISABLE"] = "1";
    RunResult run = run_free_paths("proc", env);
    INFO(run.output);
    CHECK(run.exit_status == 0);
    CHECK(access(log.c_str(), F_OK) != 0);
}

TEST_CASE("a bad variable is named in one line and the program still runs")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    auto env = shim_environment(log);
    env["GDRHOOK_QUEUE_CAPACITY"] = "banana";
    env["GDRHOOK_LOG_LEVEL"] = "loud";
    RunResult run = run_free_paths("symbol", env);
    INFO(run.output);
    CHECK(run.exit_status == 0);
    CHECK(run.output.find("GDRHOOK_QUEUE_CAPACITY='banana' is not valid") != std::string::npos);
    CHECK(run.output.find("GDRHOOK_LOG_LEVEL='loud' is not valid: expected trace, debug, "
                          "info, warn, error, critical or off; using warn") != std::string::npos);
    CHECK(read_recorded_events(log).size() == std::size(exercise_events));
}

TEST_CASE("loading the shim does nothing until CUDA is used")
{
    // The threads of a plain run: 1, or more under an emulator.
    auto plain = shim_environment("");
    plain.erase("LD_PRELOAD");
    plain.erase("GDRHOOK_EVENTS");
    RunResult baseline = run_program({build_path("GDRHOOKTEST_LOAD_IDLE")}, plain);
    const size_t at = baseline.output.find("threads=");
    REQUIRE(at != std::string::npos);
    const std::string threads = std::to_string(std::atoi(baseline.output.c_str() + at + 8));
    REQUIRE(threads != "0");
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run =
        run_program({build_path("GDRHOOKTEST_LOAD_IDLE"), threads}, shim_environment(log));
    INFO(baseline.output << run.output);
    CHECK(run.exit_status == 0);
}

TEST_CASE("an interposer preloaded after the shim, chaining with RTLD_NEXT, sees every call of "
          "every path")
{
    const std::string preload =
        build_path("GDRHOOKTEST_SHIM") + " " + build_path("GDRHOOKTEST_NEXT_SPY");
    const std::pair<const char *, const char *> modes[] = {
        {"symbol", "symbol"},
        {"dlsym", "symbol"},
        {"proc", "cuGetProcAddress"},
        {"proc_v1", "cuGetProcAddress"},
        {"runtime_entry", "cudaGetDriverEntryPoint"},
    };
    for (const auto &[mode, via] : modes) {
        INFO("mode " << mode);
        check_spy_saw_everything(check_exercise(mode, via, preload));
    }
}

TEST_CASE("an interposer preloaded before the shim sees every call through the exported symbols")
{
    // The paths that hand out the shim's functions (dlsym on libcuda's
    // handle, cuGetProcAddress) skip an interposer before the shim, as they
    // skip it without the shim: it sees only what reaches its exports.
    const std::string preload =
        build_path("GDRHOOKTEST_NEXT_SPY") + " " + build_path("GDRHOOKTEST_SHIM");
    check_spy_saw_everything(check_exercise("symbol", "symbol", preload));
    check_exercise("dlsym", "symbol", preload);
    check_exercise("proc", "cuGetProcAddress", preload);
}

TEST_CASE("an interposer after the shim that looks the driver up on libcuda's handle gets the "
          "driver's functions")
{
    // Handing it the shim's wrapper, which forwards to it, would be an
    // endless loop: a library that defines the name it asks for forwards.
    const std::string preload =
        build_path("GDRHOOKTEST_SHIM") + " " + build_path("GDRHOOKTEST_NEXT_SPY");
    const std::map<std::string, std::string> by_handle = {{"NEXT_SPY_RESOLVE", "handle"}};
    check_spy_saw_everything(check_exercise("symbol", "symbol", preload, by_handle));
    check_spy_saw_everything(check_exercise("proc", "cuGetProcAddress", preload, by_handle));
}

TEST_CASE("an interposer before the shim that looks the driver up on libcuda's handle chains "
          "through the shim")
{
    const std::string preload =
        build_path("GDRHOOKTEST_NEXT_SPY") + " " + build_path("GDRHOOKTEST_SHIM");
    const std::map<std::string, std::string> by_handle = {{"NEXT_SPY_RESOLVE", "handle"}};
    check_spy_saw_everything(check_exercise("symbol", "symbol", preload, by_handle));
}

TEST_CASE("a free the driver refused leaves its allocation tracked for the free that follows")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    auto env = pinning_environment(log);
    env["FAKECUDA_FAIL"] = "cuMemFree_v2:2:1"; // one of the buffers, on its first try
    RunResult run = run_program(
        {build_path("GDRHOOKTEST_COHERENCE_CHURN"), "refused_free", "3", "0", "2"}, env);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    REQUIRE(output_field(run.output, "refused") == 1);
    std::vector<EventLine> frees;
    for (const EventLine &e : read_recorded_events(log))
        if (e["ev"] == "free")
            frees.push_back(e);
    REQUIRE(frees.size() == 4);
    size_t refused = 0;
    for (const EventLine &e : frees) {
        INFO(e["api"] << " of " << e["addr"] << " rc " << e["rc"]);
        refused += e.number("rc") != 0;
        // The tracked allocation's values, on the refused free and on the
        // one after it alike.
        CHECK(e["kind"] == "device");
        CHECK(e.number("dev") == 0);
        CHECK(e.number("size") == 2 << 20);
    }
    CHECK(refused == 1);
}

TEST_CASE(
    "an allocation that is the first call the shim sees is logged, and pinned under pin-on-alloc")
{
    // cuInit and cuCtxCreate are not interposed: the shim starts at the
    // allocation itself, and must not lose it.
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run = run_program({build_path("GDRHOOKTEST_ALLOC_FIRST")}, pinning_environment(log));
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    auto printed = [&](const std::string &key) {
        const size_t start = run.output.find(key + "=");
        REQUIRE(start != std::string::npos);
        return run.output.substr(start + key.size() + 1,
                                 run.output.find('\n', start) - start - key.size() - 1);
    };
    const std::string plain = printed("plain");
    const std::string pitched = printed("pitched");
    std::map<std::string, std::multiset<std::string>> seen; // ev -> "api addr dev"
    for (const EventLine &e : read_recorded_events(log))
        seen[e["ev"]].insert(e["api"] + " " + e["addr"] + " " + e["dev"]);
    INFO("allocs, pins and frees logged");
    CHECK(seen["alloc"] == std::multiset<std::string>{"cuMemAlloc_v2 " + plain + " 0",
                                                      "cuMemAllocPitch_v2 " + pitched + " 0"});
    CHECK(seen["free"] == std::multiset<std::string>{"cuMemFree_v2 " + plain + " 0",
                                                     "cuMemFree_v2 " + pitched + " 0"});
    CHECK(seen["pin"].size() == 2);
    CHECK(seen["unpin"].size() == 2);
}
