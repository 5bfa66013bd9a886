// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The program never notices the shim: stream capture, stream-ordered
// memory and memory that cannot be exported, against the fake driver,
// which fails as the real driver does (tests/fake_driver/fake_capture.cpp).
// Each program is first run without the shim: what it answers there is
// what it must answer under GDRHOOK_PIN=alloc GDRHOOK_BACKEND=dmabuf.
#include "program_runs.h"

#include <cstdlib>
#include <vector>

namespace {

RunResult run_capture(const std::vector<std::string> &args, const std::string &log, bool shim)
{
    return run_test_program("GDRHOOKTEST_CAPTURE", args, log, shim);
}

} // namespace

TEST_CASE("the fake driver fails unsafe calls during a capture as the real driver does")
{
    RunResult plain = run_capture({"driver_rules"}, "", false);
    INFO(plain.output);
    REQUIRE(plain.exit_status == 0);
    // 900 CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 901 ..._INVALIDATED
    CHECK(plain.output.find("global: alloc=900 end=901") != std::string::npos);
    CHECK(plain.output.find("global_relaxed_caller: alloc=0 end=0") != std::string::npos);
    CHECK(plain.output.find("thread_local: alloc=0 end=0") != std::string::npos);
}

TEST_CASE("a global-mode capture of cuMemAllocAsync ends fine under pin-on-alloc")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult plain = run_capture({"global_async"}, log, false);
    INFO(plain.output);
    REQUIRE(plain.exit_status == 0);
    RunResult run = run_capture({"global_async"}, log, true);
    INFO(run.output);
    CHECK(run.output.find("end_capture=0") != std::string::npos);
    CHECK(run.exit_status == 0);
    std::vector<EventLine> events = read_event_file(log);
    // Graph memory is never pinned; once the capture has ended the plain
    // allocation after it is.
    CHECK(count_events(events, "pin") == 1);
    CHECK(count_events(events, "unpin") == 1);
    check_no_error_events(events);
    size_t graph_allocs = 0;
    for (const EventLine &e : events)
        if (e["ev"] == "alloc" && e["kind"] == "graph")
            ++graph_allocs;
    CHECK(graph_allocs == 1);
}

TEST_CASE("a global-mode capture survives another thread's free of pinned memory and its unpin")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult plain = run_capture({"cross_free"}, log, false);
    INFO(plain.output);
    REQUIRE(plain.exit_status == 0);
    RunResult run = run_capture({"cross_free"}, log, true);
    INFO(run.output);
    CHECK(run.output.find("end_capture=0") != std::string::npos);
    CHECK(run.exit_status == 0);
    std::vector<EventLine> events = read_event_file(log);
    CHECK(count_events(events, "free") == 2);
    CHECK(count_events(events, "pin") == count_events(events, "unpin"));
    check_no_error_events(events);
}

TEST_CASE("stream-ordered pin-on-alloc never logs an error")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run = run_capture({"stream_ordered", "20"}, log, true);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    std::vector<EventLine> events = read_event_file(log);
    CHECK(count_events(events, "alloc") == 20);
    CHECK(count_events(events, "free") == 20);
    CHECK(count_events(events, "pin") == count_events(events, "unpin"));
    check_no_error_events(events);
}

TEST_CASE("synchronized stream-ordered memory is pinned at its first lookup")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    const int rounds = 20; // pools, one after the other, of 20 allocations
    RunResult run = run_capture({"pool_lookup", "20", std::to_string(rounds)}, log, true);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "frees_made") == rounds * 21); // and cuMemPoolDestroy
    std::vector<EventLine> events = read_event_file(log);
    CHECK(count_events(events, "free") == rounds * 21);
    // The synchronized ones, at their lookup.
    CHECK(count_events(events, "pin") == rounds * 10);
    CHECK(count_events(events, "unpin") == rounds * 10);
    check_no_error_events(events);
    // Each pool's memory is back when cuMemPoolDestroy returns, as without
    // the shim: no export of it is still open then (the fake driver counts
    // freed memory an open dma-buf holds as used, as the real one does).
    // Left to the worker, the last unpin lost the race to the destroy in 9
    // runs of 10 with one pool.
    CHECK(output_field(run.output, "pool_memory_kept_max") == 0);
    CHECK(output_field(run.output, "mem_used_delta") == 0);
}

TEST_CASE("compressible memory is not an error")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run = run_capture({"compressible"}, log, true);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    std::vector<EventLine> events = read_event_file(log);
    CHECK(count_events(events, "pin") == 0);
    check_no_error_events(events);
    size_t skips = 0;
    for (const EventLine &e : events)
        if (e["ev"] == "skip") {
            ++skips;
            CHECK(e["reason"] == "not_exportable");
            CHECK(e.number("rc") == 999);
        }
    CHECK(skips == 1);
    CHECK(run.output.find("1 not_exportable") != std::string::npos); // exit statistics
}

TEST_CASE("managed and host memory are skips with a reason, not errors")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run = run_capture({"unpinnable"}, log, true);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    std::vector<EventLine> events = read_event_file(log);
    check_no_error_events(events);
    std::map<std::string, size_t> reasons;
    for (const EventLine &e : events)
        if (e["ev"] == "skip")
            ++reasons[e["reason"]];
    CHECK(reasons["managed"] == 1);
    CHECK(reasons["host"] == 1);
    CHECK(count_events(events, "pin") == 0);
    CHECK(run.output.find("1 managed, 0 ipc, 1 host") != std::string::npos);
}

TEST_CASE("the shim makes no driver call that fails where the program's own calls succeed")
{
    // A tool such as compute-sanitizer reports every failed driver call as
    // the program's error, so the shim's own calls (pins on allocation
    // included) must not fail where the program's do not. The fake driver
    // counts the failed calls of the functions the shim calls. Compressible
    // memory is the exception the README names: the shim learns that it
    // cannot be exported by trying, and the driver's refusal is counted.
    for (const char *mode : {"vmm", "unpinnable", "stream_ordered"}) {
        std::string log = make_temp_dir() + "/events.jsonl";
        std::string reports[2];
        for (bool shim : {false, true}) {
            std::vector<std::string> argv = {build_path("GDRHOOKTEST_CAPTURE"), mode};
            std::map<std::string, std::string> env = pinning_environment(log);
            env["FAKECUDA_REPORT_FAILURES"] = "1";
            if (!shim) {
                env.erase("LD_PRELOAD");
                env.erase("GDRHOOK_EVENTS");
            }
            RunResult run = run_program(argv, env);
            INFO(mode << (shim ? " under the shim: " : " alone: ") << run.output);
            REQUIRE(run.exit_status == 0);
            const size_t at = run.output.find("fakecuda: failed calls:");
            REQUIRE(at != std::string::npos);
            reports[shim] = run.output.substr(at, run.output.find('\n', at) - at);
        }
        INFO(mode);
        CHECK(reports[true] == reports[false]);
    }
}

TEST_CASE("a pool trim or destroy with nothing else queued unpins what a put left retired before "
          "it returns")
{
    // With the worker, which the put wakes and which mostly unpins first;
    // and in a process that may create no thread, where the shim has no
    // worker and nothing but the trim or destroy itself can unpin in time
    // (the fake driver keeps what an export holds at that moment). qemu-user
    // refuses seccomp filters (they would judge its own host calls): under
    // it (a cross build's tests) only the first, whose checks still hold;
    // the native build runs both.
    const char *emulator = std::getenv("GDRHOOKTEST_EXEC_WRAPPER");
    std::vector<const char *> setups = {"threads"};
    if (!emulator || !*emulator)
        setups.push_back("no_threads");
    for (const char *threads : setups) {
        INFO(threads);
        std::string log = make_temp_dir() + "/events.jsonl";
        const int rounds = 10; // trims and destroys, alternating
        RunResult run =
            run_capture({"pool_release_idle", std::to_string(rounds), threads}, log, true);
        INFO(run.output);
        REQUIRE(run.exit_status == 0);
        std::vector<EventLine> events = read_event_file(log);
        check_no_error_events(events);
        // Each round's allocation was pinned by its lookup and held across
        // its free; the put could only wake the worker, and the queue was
        // empty when the release came (the program waited for its free in
        // the log).
        CHECK(count_events(events, "pin") == rounds);
        CHECK(count_events(events, "unpin") == rounds);
        CHECK(output_field(run.output, "trim_memory_kept_max") == 0);
        CHECK(output_field(run.output, "destroy_memory_kept_max") == 0);
    }
}

namespace {

// A capture invalidated by an allocation the driver refused (900
// ..._UNSUPPORTED) and ended with 901 (..._INVALIDATED), driver or runtime
// answer alike: the program answers as without the shim, and the
// allocation after the capture is pinned, not skipped as captured.
void check_invalidated_capture_ends(const std::string &mode,
                                    const std::map<std::string, std::string> &extra = {})
{
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult plain = run_test_program("GDRHOOKTEST_CAPTURE", {mode}, log, false, extra);
    INFO(plain.output);
    REQUIRE(plain.exit_status == 0);
    RunResult run = run_test_program("GDRHOOKTEST_CAPTURE", {mode}, log, true, extra);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    CHECK(output_field(run.output, "alloc_during_capture") == 900);
    CHECK(output_field(run.output, "end_capture") == 901);
    std::vector<EventLine> events = read_recorded_events(log);
    check_no_error_events(events);
    CHECK(count_events(events, "skip") == 0);
    CHECK(count_events(events, "pin", "cuMemAlloc_v2") == 1);
    check_every_pin_released_by_a_free(events);
}

} // namespace

TEST_CASE("an invalidated capture ends too: pinning resumes after it")
{
    check_invalidated_capture_ends("invalidated");
}

TEST_CASE("an invalidated capture of the per-thread default stream through the runtime ends too")
{
    // A program built with per-thread default streams: the runtime's _ptsz
    // calls reach the driver's per-thread-stream variants, where the handle
    // 0 is the thread's own stream (the legacy one cannot be captured:
    // handed it, the program's begin failed with 900 under the shim only).
    check_invalidated_capture_ends("runtime_invalidated");
}

TEST_CASE("an invalidated capture ended through the runtime ends too where the shim never sees the "
          "driver's capture calls")
{
    // The runtime found the driver's cuGetProcAddress in the driver's
    // private table for it (cuGetExportTable), which nothing interposes:
    // its answers are the driver's own functions, so only the shim's
    // wrappers of the runtime's begin and end see the capture.
    // Legacy calls on a stream of the program's own, and the _ptsz calls
    // on the thread's default stream.
    const std::map<std::string, std::string> unseen = {{"FAKECUDART_FIND_DRIVER", "export_table"}};
    for (const char *mode : {"runtime_invalidated_legacy", "runtime_invalidated"}) {
        INFO(mode);
        check_invalidated_capture_ends(mode, unseen);
    }
}

TEST_CASE("an invalidated capture ended through the runtime's legacy calls ends too")
{
    check_invalidated_capture_ends("runtime_invalidated_legacy");
}
