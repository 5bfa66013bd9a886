// SPDX-License-Identifier: MIT OR GPL-2.0-only
// The logs of a whole job read together: processes on different hosts may
// share a pid, and each log's process is told apart by its file.
#include "report/check.h"
#include "report/summary.h"
#include "test_support.h"

using namespace gdrhook::cli;
using namespace gdrhook::cli::test;

namespace {

const std::string pin_h1 = R"(,"backend":"dmabuf","handle":1)";
const std::string h1 = R"(,"handle":1)";

// Two ranks on two hosts with the same pid, each pinning handle 1 of its
// own and unpinning it after its free.
const std::vector<std::pair<uint32_t, std::string>> same_pid_two_hosts = {
    {0, process_line(10, 100, "nodeA", 0)},
    {1, process_line(11, 100, "nodeB", 1)},
    {0, line(20, 100, "alloc", "cuMemAlloc_v2", 0x1000, 100)},
    {1, line(21, 100, "alloc", "cuMemAlloc_v2", 0x1000, 300)},
    {0, line(30, 100, "pin", "cuMemAlloc_v2", 0x1000, 100, 0, pin_h1)},
    {1, line(31, 100, "pin", "cuMemAlloc_v2", 0x1000, 300, 0, pin_h1)},
    {0, line(40, 100, "free", "cuMemFree_v2", 0x1000, 100)},
    {0, line(41, 100, "unpin", "cuMemFree_v2", 0x1000, 100, 0, h1 + R"(,"lat_ns":1000)")},
    {1, line(50, 100, "free", "cuMemFree_v2", 0x1000, 300)},
    {1, line(51, 100, "unpin", "cuMemFree_v2", 0x1000, 300, 0, h1 + R"(,"lat_ns":5000)")},
};

} // namespace

TEST_CASE("two processes with the same pid in two files are two processes in the summary", "[job]")
{
    SummaryBuilder builder;
    replay_files(builder, same_pid_two_hosts);
    Summary s = builder.finish(2, 0, 0);
    CHECK(s.processes == 2);
    // Both allocations were live at once, and both pins.
    CHECK(s.peak_live_gpu_bytes == 400);
    CHECK(s.peak_pinned_bytes == 400);
    CHECK(s.pins_held_at_end == 0);
    CHECK(s.live_allocations_at_end == 0);
}

TEST_CASE("two processes with the same pid in two files each keep their own handles in the check",
          "[job]")
{
    Checker checker;
    replay_files(checker, same_pid_two_hosts);
    CheckResult r = checker.finish();
    CHECK(r.passed());
    CHECK(r.total_problems == 0);
    CHECK(r.pins == 2);
    CHECK(r.releases == 2);
}
