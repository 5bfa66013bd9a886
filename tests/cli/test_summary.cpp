// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "report/summary.h"
#include "test_support.h"

#include <nlohmann/json.hpp>

#include <sstream>

using namespace gdrhook::cli;
using namespace gdrhook::cli::test;

TEST_CASE("the summary counts events by kind and API and tracks live and pinned peaks", "[summary]")
{
    SummaryBuilder builder;
    replay(
        builder,
        {
            line(1000, 1, "alloc", "cuMemAlloc_v2", 0x1000, 100, 0, R"(,"kind":"device")"),
            line(2000, 1, "alloc", "cuMemAllocHost_v2", 0x9000, 50, 0, R"(,"kind":"host")"),
            line(3000, 1, "pin", "cuMemAlloc_v2", 0x1000, 100, 0,
                 R"(,"backend":"dmabuf","handle":1)"),
            line(4000, 2, "alloc", "cuMemAlloc_v2", 0x1000, 300),
            line(5000, 1, "free", "cuMemFree_v2", 0x1000, 100),
            line(6000, 1, "unpin", "cuMemFree_v2", 0x1000, 100, 0, R"(,"handle":1,"lat_ns":1000)"),
            line(7000, 1, "free", "cuMemFree_v2", 0x5555, 0, 1),
            line(8000, 1, "error", "lookup", 0x1000, 0, 0, R"(,"msg":"verify: mismatch")"),
            line(9000, 1, "hover", "cuNew", 0, 0),
        });
    Summary s = builder.finish(1, 0, 0);
    CHECK(s.events == 9);
    CHECK(s.processes == 2);
    CHECK(s.by_kind[static_cast<size_t>(EventKind::alloc)].count == 3);
    CHECK(s.by_kind[static_cast<size_t>(EventKind::free)].failed == 1);
    CHECK(s.by_kind[static_cast<size_t>(EventKind::unknown)].count == 1);
    CHECK(s.by_api.at({"alloc", "cuMemAlloc_v2"}).count == 2);
    CHECK(s.by_api.count({"hover", "cuNew"}) == 0); // unknown kinds stay out of the tables
    // Host memory is not GPU memory: the peak is 100 + 300 from two processes.
    CHECK(s.peak_live_gpu_bytes == 400);
    CHECK(s.peak_live_ts_ns == 4000);
    CHECK(s.live_gpu_bytes_at_end == 300);
    CHECK(s.live_allocations_at_end == 2);
    CHECK(s.peak_pinned_bytes == 100);
    CHECK(s.pins_held_at_end == 0);
    CHECK(s.pins_by_backend.at("dmabuf").count == 1);
    CHECK(s.unpin_delay.count() == 1);
    CHECK(s.unpin_delay.max() == 1000);
    CHECK(s.verify_findings == 1);
    CHECK(s.error_messages.at("verify: mismatch") == 1);

    std::ostringstream text;
    print_summary(text, s);
    CHECK(text.str().find("from 2 process(es)") != std::string::npos);
    CHECK(text.str().find("peak 400 B") != std::string::npos);
}

namespace {

std::string sample_line(int64_t ts, int pid, uint64_t rss, uint64_t fds)
{
    return line(ts, pid, "sample", "gdrhook_worker", 0, 0, 0,
                R"(,"rss_bytes":)" + std::to_string(rss) + R"(,"fds":)" + std::to_string(fds) +
                    R"(,"pinned_bytes":0,"pins":0)");
}

} // namespace

TEST_CASE("the summary gives each process's first, last and highest sample", "[summary]")
{
    SummaryBuilder builder;
    replay(builder, {
                        line(1000, 1, "alloc", "cuMemAlloc_v2", 0x1000, 100),
                        sample_line(2000, 1, 10 << 20, 7),
                        sample_line(3000, 2, 5 << 20, 4),
                        sample_line(4000, 1, 30 << 20, 9),
                        sample_line(5000, 1, 20 << 20, 8),
                    });
    Summary s = builder.finish(1, 0, 0);
    CHECK(s.by_kind[static_cast<size_t>(EventKind::sample)].count == 4);
    CHECK(s.peak_live_gpu_bytes == 100); // samples are not memory events
    REQUIRE(s.samples.size() == 2);
    const ProcessSamples &one = s.samples.at({0, 1}); // file 0, pid 1
    CHECK(one.count == 3);
    CHECK(one.first_ts_ns == 2000);
    CHECK(one.last_ts_ns == 5000);
    CHECK(one.rss_bytes.first == 10 << 20);
    CHECK(one.rss_bytes.last == 20 << 20);
    CHECK(one.rss_bytes.max == 30 << 20);
    CHECK(one.fds.first == 7);
    CHECK(one.fds.last == 8);
    CHECK(one.fds.max == 9);

    std::ostringstream text;
    print_summary(text, s);
    CHECK(text.str().find("process samples (first -> last, max)") != std::string::npos);
    CHECK(text.str().find("3 sample(s) over 3 us: rss 10 MiB -> 20 MiB (max 30 MiB), "
                          "open fds 7 -> 8 (max 9)") != std::string::npos);
    auto json = nlohmann::json::parse(summary_json(s));
    CHECK(json["samples"].size() == 2);
    CHECK(json["samples"][0]["pid"] == 1);
    CHECK(json["samples"][0]["fds"]["max"] == 9);
    CHECK(json["by_kind"]["sample"]["count"] == 4);
}

TEST_CASE("without samples the summary has no sample section", "[summary]")
{
    SummaryBuilder builder;
    replay(builder, {line(1000, 1, "alloc", "cuMemAlloc_v2", 0x1000, 100)});
    Summary s = builder.finish(1, 0, 0);
    CHECK(s.samples.empty());
    std::ostringstream text;
    print_summary(text, s);
    CHECK(text.str().find("process samples") == std::string::npos);
}

TEST_CASE("an empty log gives an empty, valid summary", "[summary]")
{
    SummaryBuilder builder;
    Summary s = builder.finish(1, 0, 0);
    std::ostringstream text;
    print_summary(text, s);
    CHECK(text.str().find("no events") != std::string::npos);
    auto json = nlohmann::json::parse(summary_json(s));
    CHECK(json["events"] == 0);
    CHECK(json["by_kind"]["pin"]["count"] == 0);
    CHECK(json["unpin_delay_ns"]["p99"] == 0);
}

TEST_CASE("a context teardown releases the process's allocations", "[summary]")
{
    SummaryBuilder builder;
    replay(builder, {
                        line(1, 1, "alloc", "cuMemAlloc_v2", 0x1000, 100),
                        line(2, 1, "alloc", "cuMemAlloc_v2", 0x2000, 100),
                        line(3, 1, "ctx_destroy", "cuCtxDestroy_v2", 0xc0, 200),
                    });
    Summary s = builder.finish(1, 0, 0);
    CHECK(s.peak_live_gpu_bytes == 200);
    CHECK(s.live_gpu_bytes_at_end == 0);
}

TEST_CASE("the summary counts skips per reason, in text and in JSON", "[summary]")
{
    SummaryBuilder builder;
    replay(builder, {
                        line(1, 1, "skip", "cuMemAllocManaged", 0x1000, 100, 0,
                             R"(,"kind":"managed","reason":"managed")"),
                        line(2, 1, "skip", "cuMemHostAlloc", 0x2000, 100, 0,
                             R"(,"kind":"host","reason":"host")"),
                        line(3, 2, "skip", "cuMemHostRegister", 0x3000, 100, 0,
                             R"(,"kind":"host_registered","reason":"host")"),
                        line(4, 1, "skip", "cuMemCreate", 0x4000, 100, 999,
                             R"(,"kind":"vmm","reason":"not_exportable")"),
                    });
    Summary s = builder.finish(1, 0, 0);
    CHECK(s.by_kind[static_cast<size_t>(EventKind::skip)].count == 4);
    CHECK(s.skips_by_reason ==
          std::map<UntrustedText, uint64_t>{{"host", 2}, {"managed", 1}, {"not_exportable", 1}});
    std::ostringstream text;
    print_summary(text, s);
    CHECK(text.str().find("skips            4: host 2, managed 1, not_exportable 1") !=
          std::string::npos);
    auto json = nlohmann::json::parse(summary_json(s));
    CHECK(json["skips_by_reason"]["host"] == 2);
    CHECK(json["skips_by_reason"]["not_exportable"] == 1);
    CHECK(json["by_kind"]["skip"]["count"] == 4);
}

TEST_CASE("a graph's destruction or a trim names a handle, not a range that was pinned",
          "[summary]")
{
    SummaryBuilder builder;
    replay(builder, {
                        line(1, 1, "alloc", "cuMemAlloc_v2", 0x1000, 100),
                        line(2, 1, "pin", "gdrhook_get", 0x1000, 100, 0,
                             R"(,"backend":"dmabuf","handle":1)"),
                        line(3, 1, "free", "cuGraphDestroy", 0x1000, 100, 0, R"(,"kind":"graph")"),
                        line(4, 1, "free", "cuDeviceGraphMemTrim", 0, 0, 0, R"(,"kind":"graph")"),
                    });
    Summary s = builder.finish(1, 0, 0);
    CHECK(s.live_gpu_bytes_at_end == 100); // the allocation at that address lives on
    CHECK(s.pins_held_at_end == 1);
}

TEST_CASE("latency percentiles are within 3% in fixed memory", "[summary]")
{
    LatencyHistogram h;
    for (int64_t v = 1; v <= 100000; ++v)
        h.add(v * 10);
    CHECK(h.count() == 100000);
    CHECK(h.min() == 10);
    CHECK(h.max() == 1000000);
    auto near = [](int64_t got, double want) { return std::abs(got - want) <= want * 0.03; };
    CHECK(near(h.percentile(0.5), 500000));
    CHECK(near(h.percentile(0.9), 900000));
    CHECK(near(h.percentile(0.99), 990000));
    CHECK(h.percentile(1.0) == 1000000);
    LatencyHistogram small;
    small.add(7);
    CHECK(small.percentile(0.5) == 7);
    small.add(-3); // clock skew: counted as 0
    CHECK(small.min() == 0);
}
