// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "summary.h"
#include "test_support.h"

#include <nlohmann/json.hpp>

#include <sstream>

using namespace gdrhook::cli;
using namespace gdrhook::cli::test;

TEST_CASE("the summary counts events by kind and API and tracks live and pinned peaks", "[summary]")
{
    SummaryBuilder builder;
    replay(builder, {
        line(1000, 1, "alloc", "cuMemAlloc_v2", 0x1000, 100, 0, R"(,"kind":"device")"),
        line(2000, 1, "alloc", "cuMemAllocHost_v2", 0x9000, 50, 0, R"(,"kind":"host")"),
        line(3000, 1, "pin", "cuMemAlloc_v2", 0x1000, 100, 0, R"(,"backend":"dmabuf","handle":1)"),
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
