// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "test_support.h"
#include "timeline.h"

using namespace gdrhook::cli;
using namespace gdrhook::cli::test;

TEST_CASE("the timeline keeps a fixed number of buckets however long the log", "[timeline]")
{
    TimelineBuilder builder;
    std::vector<std::string> lines;
    for (int i = 0; i < 5000; ++i) {
        int64_t ts = int64_t{i} * 1000000; // 5 s in 1 ms steps
        lines.push_back(line(ts, 1, "alloc", "a", 0x1000 + uint64_t(i) * 0x1000, 4096));
    }
    replay(builder, lines);
    Timeline t = builder.finish();
    REQUIRE(t.series.size() == 1);
    CHECK(t.series[0].buckets.size() == TimelineBuilder::bucket_count);
    CHECK(t.used_buckets <= TimelineBuilder::bucket_count);
    CHECK(t.used_buckets * static_cast<uint64_t>(t.bucket_ns) >= 4999000000ull);
    // The highest value is preserved through the merging of buckets.
    uint64_t peak = 0;
    for (const auto &b : t.series[0].buckets)
        peak = std::max(peak, b.live_max);
    CHECK(peak == 5000 * 4096);
}

TEST_CASE("processes beyond the limit share one series", "[timeline]")
{
    TimelineBuilder builder;
    std::vector<std::string> lines;
    for (int pid = 1; pid <= 14; ++pid)
        lines.push_back(line(pid, pid, "alloc", "a", 0x1000, 4096));
    replay(builder, lines);
    Timeline t = builder.finish();
    CHECK(t.processes == 14);
    REQUIRE(t.series.size() == TimelineBuilder::max_series + 1);
    CHECK(t.series.back().pid == -1);
    uint64_t other_peak = 0;
    for (const auto &b : t.series.back().buckets)
        other_peak = std::max(other_peak, b.live_max);
    CHECK(other_peak == 4 * 4096);
}

TEST_CASE("the SVG has axes with units, a legend per process and markers", "[timeline]")
{
    TimelineBuilder builder;
    replay(builder, {
        line(0, 10, "alloc", "a", 0x1000, 3 << 20),
        line(1000000, 10, "pin", "a", 0x1000, 3 << 20, 0, R"(,"handle":1)"),
        line(2000000, 20, "alloc", "a", 0x1000, 1 << 20),
        line(3000000, 10, "revoke", "cb", 0x1000, 3 << 20, 0, R"(,"handle":1)"),
        line(4000000, 10, "free", "f", 0x1000, 3 << 20),
    });
    std::string svg = render_timeline_svg(builder.finish(), {"title & <more>", {"a.jsonl"}});
    CHECK(svg.find("<svg") != std::string::npos);
    CHECK(svg.find("</svg>") != std::string::npos);
    CHECK(svg.find("title &amp; &lt;more&gt;") != std::string::npos);
    CHECK(svg.find(">MiB<") != std::string::npos);
    CHECK(svg.find("time since first event (ms)") != std::string::npos);
    CHECK(svg.find(">pid 10<") != std::string::npos);
    CHECK(svg.find(">pid 20<") != std::string::npos);
    CHECK(svg.find("1 revocation(s)") != std::string::npos);
    CHECK(svg.find("1 free(s)") != std::string::npos);
}

TEST_CASE("an empty timeline is still a valid picture", "[timeline]")
{
    TimelineBuilder builder;
    std::string svg = render_timeline_svg(builder.finish(), {"empty", {}});
    CHECK(svg.find("no memory events") != std::string::npos);
    CHECK(svg.find("</svg>") != std::string::npos);
}
