// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The registration cache inside the shim, end to end through the loader
// against the fake driver (whose dma-buf export keeps freed memory counted
// in cuMemGetInfo until the fd closes, like the real driver):
// GDRHOOK_PIN=alloc pins each large allocation, every free unpins it
// through the worker, lookups never return a stale registration, and
// nothing stays pinned or allocated.
#include "event_lines.h"
#include "program_runs.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <filesystem>
#include <map>
#include <set>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

// Each pin is released by exactly one unpin of its handle, after the free
// of its range or at exit; returns the number of pins.
size_t check_pins_released(const std::vector<EventLine> &events)
{
    std::map<long long, const EventLine *> pinned; // handle -> pin
    std::set<long long> released;
    size_t pins = 0;
    for (const EventLine &e : events) {
        if (e["ev"] == "pin") {
            ++pins;
            CHECK(e["backend"] == "dmabuf");
            REQUIRE(pinned.count(e.number("handle")) == 0);
            pinned[e.number("handle")] = &e;
        } else if (e["ev"] == "unpin") {
            long long handle = e.number("handle");
            INFO("unpin of handle " << handle);
            CHECK(pinned.count(handle) == 1);
            CHECK(released.insert(handle).second);
            CHECK(e.number("rc") == 0);
            CHECK(e.has("lat_ns"));
            pinned.erase(handle);
        } else if (e["ev"] == "error") {
            FAIL_CHECK("error event: " << e["msg"]);
        }
    }
    CHECK(pinned.empty());
    return pins;
}

// Pins made at allocation (GDRHOOK_PIN=alloc) and re-pins made by a
// library's gdrhook_get(). A free drops every pin that started before the
// freeing thread read the cache's pin clock after the real free returned
// (registration_cache.h, invalidate()): when another thread got the same
// address back and pinned it in that window, its fresh pin is dropped too
// and the next lookup pins again. That is the safe answer to an ambiguous
// interleaving, so the counts below are invariants, not exact totals.
struct PinCauses {
    size_t at_alloc = 0;
    size_t by_lookup = 0;
};

PinCauses count_pin_causes(const std::vector<EventLine> &events)
{
    PinCauses causes;
    for (const EventLine &e : events) {
        if (e["ev"] != "pin")
            continue;
        if (e["api"] == "gdrhook_get")
            ++causes.by_lookup;
        else
            ++causes.at_alloc;
    }
    return causes;
}

} // namespace

TEST_CASE("pin on alloc: every free unpins, lookups are never stale, memory comes back")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run =
        run_program({build_path("GDRHOOKTEST_COHERENCE_CHURN"), "gdrhook", "4", "300", "2"},
                    pinning_environment(log));
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "lookups") == 1200);
    CHECK(output_field(run.output, "same_address") > 0); // the driver reused addresses
    CHECK(output_field(run.output, "stale") == 0);
    CHECK(output_field(run.output, "verify_mismatches") == 0);
    CHECK(output_field(run.output, "used_delta_bytes") == 0);

    std::vector<EventLine> events = read_event_file(log);
    size_t allocs = 0, frees = 0, unpins_by_free = 0;
    std::set<std::string> freed;        // the free is invalidated before the real
    for (const EventLine &e : events) { // free runs, so its unpin may be
        if (e["ev"] == "alloc")         // logged before the free event
            ++allocs;
        if (e["ev"] == "free") {
            ++frees;
            freed.insert(e["addr"]);
        }
    }
    for (const EventLine &e : events)
        if (e["ev"] == "unpin" && e["reason"] == "invalidated" && freed.count(e["addr"]))
            ++unpins_by_free;
    CHECK(allocs == 1200);
    CHECK(frees == 1200);
    const size_t pins = check_pins_released(events);
    const PinCauses causes = count_pin_causes(events);
    INFO(causes.by_lookup << " re-pins by lookups whose pin a racing free dropped");
    CHECK(causes.at_alloc == allocs); // every allocation pinned once, when made
    CHECK(pins == causes.at_alloc + causes.by_lookup);
    CHECK(unpins_by_free == pins); // every pin ended by the free of its range
}

TEST_CASE("without the hook a cache that never hears of frees is stale and keeps memory")
{
    // The baseline the hook fixes, on the same fake driver: the naive
    // cache's exports keep every freed buffer allocated, and its hits on
    // reused addresses name buffers that no longer exist.
    RunResult run =
        run_program({build_path("GDRHOOKTEST_COHERENCE_CHURN"), "naive", "2", "50", "2"},
                    {{"LD_LIBRARY_PATH", build_path("GDRHOOKTEST_FAKE_DRIVER_DIR")}});
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "stale") > 0);
    CHECK(output_field(run.output, "used_delta_bytes") > 0);
}

TEST_CASE("registrations still pinned at exit are unpinned and logged")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run = run_program({build_path("GDRHOOKTEST_COHERENCE_CHURN"), "leak", "4", "0", "2"},
                                pinning_environment(log));
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    std::vector<EventLine> events = read_event_file(log);
    CHECK(check_pins_released(events) == 4);
    size_t teardown = 0;
    for (const EventLine &e : events)
        teardown += e["ev"] == "unpin" && e["reason"] == "teardown";
    CHECK(teardown == 4);
    CHECK(run.output.find("4 pins (0 failed), 4 unpins (0 failed)") != std::string::npos);
}

TEST_CASE("GDRHOOK_PIN=off logs no pins and the public API answers ENODEV")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    auto env = pinning_environment(log);
    env["GDRHOOK_PIN"] = "off";
    RunResult run =
        run_program({build_path("GDRHOOKTEST_COHERENCE_CHURN"), "gdrhook", "1", "5", "2"}, env);
    INFO(run.output);
    CHECK(run.exit_status == 2);
    CHECK(run.output.find("No such device") != std::string::npos);
    for (const EventLine &e : read_event_file(log))
        CHECK(e["ev"] != "pin");
}

TEST_CASE("the README's API example works with the library linked, not preloaded")
{
    RunResult run = run_program({build_path("GDRHOOKTEST_API_EXAMPLE")},
                                {{"LD_LIBRARY_PATH", build_path("GDRHOOKTEST_FAKE_DRIVER_DIR")},
                                 {"GDRHOOK_BACKEND", "dmabuf"}});
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(run.output.find("at offset 4096 of a dma-buf pin") != std::string::npos);
    CHECK(run.output.find("pins 1, invalidated by frees 1") != std::string::npos);
}

TEST_CASE("a forked child that only execs another program leaves no log and no pin")
{
    // Python's subprocess forks and execs at once: the child never records
    // anything, so it has no log to restate the parent's pins in, and the
    // parent's log alone accounts for them.
    std::string dir = make_temp_dir() + "/fork_exec";
    REQUIRE(mkdir(dir.c_str(), 0755) == 0);
    RunResult run =
        run_program({build_path("GDRHOOKTEST_COHERENCE_CHURN"), "fork_exec", "3", "20", "2"},
                    pinning_environment(dir + "/events.%p.jsonl"));
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "child_status") == 0);
    CHECK(output_field(run.output, "stale") == 0);
    CHECK(output_field(run.output, "used_delta_bytes") == 0);
    std::vector<std::string> logs;
    for (const auto &entry : std::filesystem::directory_iterator(dir))
        logs.push_back(entry.path().string());
    REQUIRE(logs.size() == 1);
    std::vector<EventLine> events = read_event_file(logs[0]);
    const size_t pins = check_pins_released(events);
    const PinCauses causes = count_pin_causes(events);
    CHECK(causes.at_alloc == 3 + 3 * 20);
    CHECK(pins == causes.at_alloc + causes.by_lookup);
    for (const EventLine &e : events)
        CHECK(e["reason"] != "inherited");
}

TEST_CASE(
    "a context teardown drops its allocations' registrations before their addresses come back")
{
    // cuCtxDestroy frees the context's allocations with no free call of
    // their own; the primary context's next allocations get the same
    // addresses, and their lookups must find new registrations.
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run =
        run_program({build_path("GDRHOOKTEST_COHERENCE_CHURN"), "ctx_destroy", "4", "10", "2"},
                    pinning_environment(log));
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "same_address") > 0); // the case this test is about happened
    CHECK(output_field(run.output, "stale") == 0);
    CHECK(output_field(run.output, "verify_mismatches") == 0);
    CHECK(output_field(run.output, "used_delta_bytes") == 0);
    // A dead context's memory is back when cuCtxDestroy returns: its
    // registrations are unpinned before the call returns, not by the
    // worker after (an open export keeps freed memory allocated).
    CHECK(output_field(run.output, "teardown_kept_max") == 0);
    std::vector<EventLine> events = read_event_file(log);
    check_pins_released(events);
    size_t unpinned_at_teardown = 0;
    for (const EventLine &e : events)
        unpinned_at_teardown += e["ev"] == "unpin" && e["reason"] == "invalidated";
    // The 40 pins of the dead contexts and the 40 of the buffers freed after.
    CHECK(unpinned_at_teardown == 2 * 4 * 10);
}

TEST_CASE("a pinned buffer's memory is free when its cuMemFree returns")
{
    // The driver keeps freed memory that an open dma-buf exports allocated
    // until the fd is closed (the fake driver counts it as used, as the real
    // one does): the free's unpin must be done by the time the call returns,
    // as without the shim the memory would be free.
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run =
        run_program({build_path("GDRHOOKTEST_COHERENCE_CHURN"), "free_kept", "4", "50", "2"},
                    pinning_environment(log));
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "free_kept_max") == 0);
    CHECK(output_field(run.output, "used_delta_bytes") == 0);
    std::vector<EventLine> events = read_event_file(log);
    CHECK(check_pins_released(events) >= 4 * 50);
    CHECK(count_events(events, "free") == 4 * 50);
}

TEST_CASE("a log opens with a process line: host, rank, parent, command line, version, "
          "configuration, clock")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    auto env = pinning_environment(log);
    env["SLURM_PROCID"] = "17";
    RunResult run =
        run_program({build_path("GDRHOOKTEST_COHERENCE_CHURN"), "gdrhook", "1", "2", "2"}, env);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    std::vector<EventLine> events = read_event_file(log);
    REQUIRE(events.size() > 1);
    const EventLine &first = events.front();
    CHECK(first["ev"] == "process");
    CHECK(first.number("seq") == 0);
    CHECK(first.number("rank") == 17);
    CHECK(first["rank_from"] == "SLURM_PROCID");
    CHECK(first.number("pid") == events.back().number("pid"));
    CHECK(first.number("ppid") == static_cast<long long>(getpid()));
    CHECK(!first["host"].empty());
    CHECK(first["cmdline"].rfind(R"([")", 0) == 0);
    CHECK(first["cmdline"].find("coherence_churn") != std::string::npos);
    CHECK(first["config"].find(R"("GDRHOOK_PIN":"alloc")") != std::string::npos);
    CHECK(!first["version"].empty());
    CHECK(first["clock"].rfind(R"({"source":")", 0) == 0);
    for (size_t i = 1; i < events.size(); ++i)
        CHECK(events[i]["ev"] != "process"); // one per process
}

TEST_CASE("a job of 8 ranks on one log pattern writes one file per rank, each opening with its "
          "process line")
{
    // As a launcher starts them: together, each with its RANK, all with one
    // GDRHOOK_EVENTS pattern that names no pid (pids repeat across nodes).
    const std::string dir = make_temp_dir() + "/job";
    std::filesystem::create_directory(dir);
    char host[256] = {};
    REQUIRE(gethostname(host, sizeof host - 1) == 0);
    const std::string short_host = std::string(host).substr(0, std::string(host).find('.'));
    constexpr int ranks = 8;
    const std::string program = build_path("GDRHOOKTEST_COHERENCE_CHURN");
    std::vector<pid_t> started;
    for (int rank = 0; rank < ranks; ++rank) {
        auto env = pinning_environment(dir + "/events.%h.%r.jsonl");
        env["RANK"] = std::to_string(rank);
        const std::string output = dir + "/../rank" + std::to_string(rank) + ".out";
        pid_t child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            int fd = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
                _exit(127);
            exec_program({program, "gdrhook", "2", "20", "2"}, env);
        }
        started.push_back(child);
    }
    std::vector<int> exit_statuses;
    for (pid_t child : started) {
        int status = 0;
        REQUIRE(waitpid(child, &status, 0) == child);
        exit_statuses.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    std::set<long long> pids;
    for (int rank = 0; rank < ranks; ++rank) {
        INFO("rank " << rank << " (output in " << dir << "/../rank" << rank << ".out)");
        REQUIRE(exit_statuses[rank] == 0);
        const std::string path =
            dir + "/events." + short_host + "." + std::to_string(rank) + ".jsonl";
        std::vector<EventLine> events = read_event_file(path);
        REQUIRE(events.size() > 1);
        const EventLine &first = events.front();
        CHECK(first["ev"] == "process");
        CHECK(first.number("rank") == rank);
        CHECK(first["rank_from"] == "RANK");
        CHECK(first["host"] == short_host);
        size_t frees = 0;
        for (const EventLine &e : events) {
            CHECK(e.number("pid") == first.number("pid")); // one process a file
            frees += e["ev"] == "free";
        }
        CHECK(frees == 2 * 20);
        pids.insert(first.number("pid"));
    }
    CHECK(pids.size() == ranks);
    size_t files = 0;
    for (const auto &entry : std::filesystem::directory_iterator(dir))
        files += entry.is_regular_file();
    CHECK(files == ranks); // one file per rank, nothing else
}

TEST_CASE("a free wakes the sleeping worker: the unpin comes long before the process ends")
{
    // The worker falls asleep in the 2 s before the frees, and the program
    // waits 2 s after them: an unpin that waited for the exit would be
    // 2 s late.
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run =
        run_program({build_path("GDRHOOKTEST_COHERENCE_CHURN"), "free_then_wait", "3", "2000", "2"},
                    pinning_environment(log));
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    std::vector<EventLine> events = read_event_file(log);
    CHECK(check_pins_released(events) == 3);
    size_t unpins = 0;
    for (const EventLine &e : events) {
        if (e["ev"] != "unpin")
            continue;
        ++unpins;
        CHECK(e["reason"] == "invalidated");
        CHECK(e.number("lat_ns") < 1'000'000'000); // a bound, not a figure: see docs/performance.md
    }
    CHECK(unpins == 3);
}

TEST_CASE(
    "a lookup that pins while the driver is still freeing the range is dropped after the free")
{
    // The free invalidates before the real free runs; a lookup in the
    // window that follows pins memory that is about to go. Pins on demand,
    // so nothing but that pin could answer the lookup after the address
    // comes back.
    std::string log = make_temp_dir() + "/events.jsonl";
    std::map<std::string, std::string> env = pinning_environment(log);
    env["GDRHOOK_PIN"] = "demand";
    RunResult run = run_program(
        {build_path("GDRHOOKTEST_COHERENCE_CHURN"), "lookup_in_free", "1", "20", "2"}, env);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "looked_up_in_free") == 20); // the race this test is about
    CHECK(output_field(run.output, "same_address") > 0);
    CHECK(output_field(run.output, "stale") == 0);
    CHECK(output_field(run.output, "verify_mismatches") == 0);
    CHECK(output_field(run.output, "used_delta_bytes") == 0);
    check_pins_released(read_event_file(log));
}
