// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "event_lines.h"
#include "report/timeline.h"
#include "test_support.h"

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

namespace {

std::string sample_line(int64_t ts, int pid, uint64_t rss, uint64_t fds)
{
    return line(ts, pid, "sample", "gdrhook_worker", 0, 0, 0,
                R"(,"rss_bytes":)" + std::to_string(rss) + R"(,"fds":)" + std::to_string(fds) +
                    R"(,"pinned_bytes":0,"pins":0)");
}

template <typename Value> uint64_t highest(const TimelineSeries &series, Value value)
{
    uint64_t peak = 0;
    for (const auto &b : series.buckets)
        peak = std::max<uint64_t>(peak, value(b));
    return peak;
}

} // namespace

TEST_CASE("samples give each process its resident memory and open fds over time", "[timeline]")
{
    TimelineBuilder builder;
    replay(builder, {
                        line(0, 10, "alloc", "a", 0x1000, 1 << 20),
                        sample_line(1000000, 10, 100 << 20, 12),
                        sample_line(2000000, 20, 50 << 20, 5),
                        sample_line(3000000, 10, 150 << 20, 11),
                    });
    Timeline t = builder.finish();
    CHECK(t.samples == 3);
    REQUIRE(t.series.size() == 2);
    const TimelineSeries &ten = t.series[0];
    CHECK(ten.pid == 10);
    CHECK(highest(ten, [](const TimelineBucket &b) { return b.rss_max; }) == 150 << 20);
    CHECK(highest(ten, [](const TimelineBucket &b) { return b.fds_max; }) == 12);
    CHECK(highest(ten, [](const TimelineBucket &b) { return b.live_max; }) == 1 << 20);
    // A process with samples only has no memory line.
    CHECK(highest(t.series[1], [](const TimelineBucket &b) { return b.touched; }) == 0);
    CHECK(highest(t.series[1], [](const TimelineBucket &b) { return b.rss_max; }) == 50 << 20);

    std::string svg = render_timeline_svg(t, {"soak", {"a.jsonl"}});
    CHECK(svg.find("height='1110'") != std::string::npos);
    CHECK(svg.find("process memory (resident, sampled)") != std::string::npos);
    CHECK(svg.find("open file descriptors (sampled)") != std::string::npos);
    CHECK(svg.find(">descriptors<") != std::string::npos);
}

TEST_CASE("without samples the timeline has its two memory panels only", "[timeline]")
{
    TimelineBuilder builder;
    replay(builder, {line(0, 10, "alloc", "a", 0x1000, 1 << 20)});
    std::string svg = render_timeline_svg(builder.finish(), {"plain", {}});
    CHECK(svg.find("height='700'") != std::string::npos);
    CHECK(svg.find("(sampled)") == std::string::npos);
}

TEST_CASE("the other processes' series adds up their latest samples", "[timeline]")
{
    TimelineBuilder builder;
    std::vector<std::string> lines;
    for (int pid = 1; pid <= 12; ++pid) // pids 11 and 12 share the last series
        lines.push_back(sample_line(pid, pid, 10 << 20, 3));
    lines.push_back(sample_line(100, 11, 30 << 20, 4)); // replaces pid 11's first
    replay(builder, lines);
    Timeline t = builder.finish();
    REQUIRE(t.series.back().pid == -1);
    CHECK(highest(t.series.back(), [](const TimelineBucket &b) { return b.rss_max; }) == 40 << 20);
    CHECK(highest(t.series.back(), [](const TimelineBucket &b) { return b.fds_max; }) == 7);
}

namespace {

// Every line of a file, in the order written.
std::vector<std::string> file_lines(const std::string &path)
{
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string text; std::getline(in, text);)
        lines.push_back(text);
    return lines;
}

} // namespace

TEST_CASE("the timeline of a shim's log shows pinned memory dropping at the free, not later",
          "[timeline]")
{
    // The README's demo under the shim with pin-on-alloc: it frees its
    // pinned 64 MiB buffers, then goes on with a VMM mapping. The shim
    // unpins each buffer inside its free, so from the program's next call
    // on, no more is pinned than is allocated.
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult run = run_program({build_path("GDRHOOKTEST_DEMO")}, pinning_environment(log));
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    std::vector<EventLine> events = read_recorded_events(log);
    // The last free of a 64 MiB buffer, and the program's next call.
    const EventLine *last_free = nullptr;
    for (const EventLine &e : events)
        if (e["ev"] == "free" && e["kind"] == "device")
            last_free = &e;
    REQUIRE(last_free);
    const EventLine *next = nullptr;
    for (const EventLine &e : events)
        if (e["api"] != "gdrhook_worker" && e["tid"] == (*last_free)["tid"] &&
            e.number("seq") == last_free->number("seq") + 1)
            next = &e;
    REQUIRE(next);
    INFO("last free at " << (*last_free)["ts_ns"] << ", next call " << (*next)["api"] << " at "
                         << (*next)["ts_ns"]);

    TimelineBuilder builder;
    replay(builder, file_lines(log));
    Timeline t = builder.finish();
    REQUIRE(t.series.size() == 1);
    // Events stamped before the first line's time (the process line, stamped
    // as the log opened) are drawn in bucket 0.
    const auto from =
        static_cast<size_t>(std::max<int64_t>(next->number("ts_ns") - t.t0_ns, 0) / t.bucket_ns);
    size_t drawn = 0;
    for (size_t i = from; i < t.used_buckets; ++i) {
        const TimelineBucket &b = t.series[0].buckets[i];
        if (!b.touched)
            continue;
        ++drawn;
        INFO("bucket " << i << " of " << t.used_buckets << ", " << t.bucket_ns << " ns each");
        CHECK(b.pinned_last <= b.live_last);
    }
    CHECK(drawn > 0);
}
