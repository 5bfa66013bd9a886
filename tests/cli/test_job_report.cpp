// SPDX-License-Identifier: MIT OR GPL-2.0-only
// What the `process` line says and how summary, check and timeline report
// the hosts and ranks of a job.
#include "read/log_reader.h"
#include "report/check.h"
#include "report/summary.h"
#include "report/timeline.h"
#include "test_support.h"

#include <nlohmann/json.hpp>

#include <sstream>

using namespace gdrhook::cli;
using namespace gdrhook::cli::test;

namespace {

const std::string pin_h1 = R"(,"backend":"dmabuf","handle":1)";
const std::string h1 = R"(,"handle":1)";

std::string lat(int64_t ns)
{
    return h1 + R"(,"lat_ns":)" + std::to_string(ns);
}

} // namespace

TEST_CASE("a process line is parsed: host, rank, parent, command line, version, configuration",
          "[job]")
{
    StringTable strings;
    LineParser parser(strings);
    LogEvent e;
    std::string text = process_line(
        5, 4398, "node017", 3,
        R"(,"rank_from":"SLURM_PROCID","config":{"GDRHOOK_PIN":"alloc","GDRHOOK_BACKEND":"dmabuf"},)"
        R"("driver_version":13000,"devices":[{"ordinal":0,"name":"NVIDIA H100","uuid":"GPU-1"}],)"
        R"("clock":{"source":"tsc","realtime_ns":5,"monotonic_ns":2,"tsc":77,"tsc_hz":2000000000})");
    REQUIRE(parser.parse(text, e) == "");
    CHECK(e.kind == EventKind::process);
    CHECK(e.process.host == "node017");
    CHECK(e.process.has_rank);
    CHECK(e.process.rank == 3);
    CHECK(e.process.ppid == 1);
    CHECK(e.process.cmdline == "python3 train.py");
    CHECK(e.process.version == "0.1.0");
    CHECK(e.process.config == "GDRHOOK_BACKEND=dmabuf GDRHOOK_PIN=alloc"); // sorted
    CHECK(e.process.driver_version == 13000);

    REQUIRE(parser.parse(process_line(5, 1, "h", -1), e) == "");
    CHECK_FALSE(e.process.has_rank);

    // A key of the wrong type makes the line malformed, as anywhere else.
    CHECK(parser
              .parse(R"({"ts_ns":1,"pid":1,"tid":1,"ev":"process","api":"gdrhook","addr":"0x0",)"
                     R"("size":0,"dev":-1,"rc":0,"rank":"3"})",
                     e)
              .find("\"rank\"") != std::string::npos);
    CHECK(parser
              .parse(R"({"ts_ns":1,"pid":1,"tid":1,"ev":"process","api":"gdrhook","addr":"0x0",)"
                     R"("size":0,"dev":-1,"rc":0,"cmdline":"python3 x.py"})",
                     e)
              .find("\"cmdline\"") != std::string::npos);
    // Other kinds of lines may use those names for something else.
    CHECK(parser.parse(line(1, 1, "alloc", "a", 0x1000, 1, 0, R"(,"rank":"x","host":7)"), e) == "");
}

TEST_CASE("the check names the rank and host of each problem", "[job]")
{
    Checker checker;
    replay_files(
        checker,
        {
            {0, process_line(10, 100, "nodeA", 0)},
            {1, process_line(11, 100, "nodeB", 7)},
            {2, line(12, 300, "pin", "cuMemAlloc_v2", 0x1000, 4096, 0, pin_h1)}, // no process line
            {0, line(20, 100, "pin", "cuMemAlloc_v2", 0x1000, 4096, 0, pin_h1)},
            {1, line(21, 100, "pin", "cuMemAlloc_v2", 0x1000, 4096, 0, pin_h1)},
            {1, line(22, 100, "error", "cuMemAlloc_v2", 0x2000, 4096, 2, R"(,"msg":"pin failed")")},
            {0, line(30, 100, "unpin", "cuMemFree_v2", 0x1000, 4096, 0, h1)},
        });
    CheckResult r = checker.finish();
    REQUIRE(r.total_problems == 3);
    std::ostringstream out;
    print_check(out, r, {"a.jsonl", "b.jsonl", "c.jsonl"}, 0);
    std::string text = out.str();
    CHECK(text.find("b.jsonl:2: pin never unpinned: rank 7, host nodeB, pid 100, handle 1") !=
          std::string::npos);
    CHECK(text.find("b.jsonl:3: error event: rank 7, host nodeB, pid 100, cuMemAlloc_v2") !=
          std::string::npos);
    CHECK(text.find("c.jsonl:1: pin never unpinned: pid 300, handle 1") != std::string::npos);
    CHECK(text.find("problems by process: rank 7 (nodeB) 2, pid 300 1\n") != std::string::npos);
    CHECK(text.find("rank 0") == std::string::npos); // it had no problem
}

TEST_CASE("a pid without a process line of its own takes its file's host and rank", "[job]")
{
    Checker checker;
    replay_files(checker, {
                              {0, process_line(10, 100, "nodeA", 4)},
                              {0, line(20, 101, "pin", "cuMemAlloc_v2", 0x1000, 4096, 0,
                                       pin_h1)}, // a forked child
                          });
    CheckResult r = checker.finish();
    REQUIRE(r.problems.size() == 1);
    CHECK(describe(r.problems[0].who) == "rank 4, host nodeA, pid 101");
}

TEST_CASE("the summary breaks a job down by host and by process", "[job]")
{
    SummaryBuilder builder;
    replay_files(
        builder,
        {
            {0, process_line(10, 100, "nodeA", 0, R"(,"config":{"GDRHOOK_PIN":"alloc"})")},
            {1, process_line(11, 100, "nodeA", 1, R"(,"config":{"GDRHOOK_PIN":"alloc"})")},
            {2, process_line(12, 100, "nodeB", 2, R"(,"config":{"GDRHOOK_PIN":"demand"})")},
            // nodeA: ranks 0 and 1 hold 100 + 200 at once, then rank 1 alone 500.
            {0, line(20, 100, "pin", "a", 0x1000, 100, 0, pin_h1)},
            {1, line(21, 100, "pin", "a", 0x1000, 200, 0, pin_h1)},
            {0, line(22, 100, "unpin", "f", 0x1000, 100, 0, lat(1000))},
            {1, line(23, 100, "unpin", "f", 0x1000, 200, 0, lat(2000))},
            {1, line(24, 100, "pin", "a", 0x9000, 250, 0, R"(,"handle":2)")},
            {1, line(24, 100, "pin", "a", 0xa000, 250, 0, R"(,"handle":3)")},
            {1, line(25, 100, "unpin", "f", 0x9000, 250, 0, R"(,"handle":2,"lat_ns":9000000)")},
            {1, line(25, 100, "unpin", "f", 0xa000, 250, 0, R"(,"handle":3,"lat_ns":8000)")},
            // nodeB: one pin of 50, two errors.
            {2, line(30, 100, "pin", "a", 0x1000, 50, 0, pin_h1)},
            {2, line(31, 100, "unpin", "f", 0x1000, 50, 0, lat(3000))},
            {2, line(32, 100, "error", "a", 0x1000, 0, 0, R"(,"msg":"verify: stale")")},
            {2, line(33, 100, "error", "a", 0x1000, 0, 2, R"(,"msg":"pin failed")")},
        });
    Summary s = builder.finish(3, 0, 0);
    CHECK(s.processes == 3);
    CHECK(s.process_lines == 3);
    CHECK(s.versions.at("0.1.0") == 3);
    CHECK(s.configurations.size() == 2);
    CHECK(s.configurations.at("GDRHOOK_PIN=alloc") == 2);
    CHECK(s.commands.at("python3 train.py") == 3);

    REQUIRE(s.by_process.size() == 3);
    const ProcessSummary &rank1 = s.by_process[1];
    CHECK(rank1.who.rank == 1);
    CHECK(rank1.who.host == "nodeA");
    CHECK(rank1.figures.pins == 3);
    CHECK(rank1.figures.unpins == 3);
    CHECK(rank1.figures.peak_pinned_bytes == 500);
    CHECK(rank1.figures.unpin_delay.count == 3);
    CHECK(rank1.figures.unpin_delay.max_ns == 9000000);
    CHECK(s.by_process[2].figures.errors == 2);
    CHECK(s.by_process[2].figures.verify_findings == 1);

    REQUIRE(s.by_host.size() == 2);
    const HostSummary &a = s.by_host[0];
    CHECK(a.host == "nodeA");
    CHECK(a.processes == 2);
    CHECK(a.figures.pins == 4);
    CHECK(a.figures.peak_pinned_bytes == 500); // 300 at once, then 500
    CHECK(a.figures.unpin_delay.count == 4);
    CHECK(a.figures.unpin_delay.max_ns == 9000000);
    CHECK(s.by_host[1].host == "nodeB");
    CHECK(s.by_host[1].figures.errors == 2);
    CHECK(s.peak_pinned_bytes == 500);

    std::ostringstream out;
    print_summary(out, s);
    std::string text = out.str();
    INFO(text);
    CHECK(text.find("3 process(es) on 2 host(s); 3 `process` line(s); 3 with a rank (0 to 2)") !=
          std::string::npos);
    CHECK(text.find("2 configuration(s) (they differ)") != std::string::npos);
    CHECK(
        text.find(
            "slowest unpins, by process (p99 of the delay from free to unpin)\n  rank 1 (nodeA)") !=
        std::string::npos);
    CHECK(
        text.find(
            "most pinned memory, by process (peak)\n  rank 1 (nodeA)          500 B (3 pin(s))") !=
        std::string::npos);
    CHECK(text.find("errors, by process\n  rank 2 (nodeB)          2 error event(s), 1 verify-mode "
                    "finding(s)") != std::string::npos);
    CHECK(text.find("by host (most pinned memory first)\n  nodeA               2 process(es)") !=
          std::string::npos);

    auto json = nlohmann::json::parse(summary_json(s));
    REQUIRE(json["by_process"].size() == 3);
    CHECK(json["by_process"][2]["host"] == "nodeB");
    CHECK(json["by_process"][2]["rank"] == 2);
    CHECK(json["by_process"][2]["file"] == 2);
    CHECK(json["by_host"][0]["peak_pinned_bytes"] == 500);
    CHECK(json["configurations"]["GDRHOOK_PIN=demand"] == 1);
}

TEST_CASE("a single log without process lines prints no job section", "[job]")
{
    SummaryBuilder builder;
    replay(builder, {line(1, 1, "alloc", "a", 0x1000, 1)});
    std::ostringstream out;
    print_summary(out, builder.finish(1, 0, 0));
    CHECK(out.str().find("\njob\n") == std::string::npos);
}

TEST_CASE("the timeline names each process by rank and host", "[job]")
{
    TimelineBuilder builder;
    replay_files(builder, {
                              {0, process_line(10, 100, "nodeA", 0)},
                              {1, process_line(11, 100, "nodeB", 1)},
                              {0, line(20, 100, "alloc", "a", 0x1000, 100)},
                              {1, line(21, 100, "alloc", "a", 0x1000, 300)},
                          });
    Timeline t = builder.finish();
    REQUIRE(t.series.size() == 2);
    CHECK(t.series[0].label == "rank 0 (nodeA)");
    CHECK(t.series[1].label == "rank 1 (nodeB)");
    CHECK(t.processes == 2);
}
