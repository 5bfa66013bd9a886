// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// GDRHOOK_SAMPLE_MS below the shim: what a sample measures, how its line
// reads, and that the worker takes one about every interval while it
// sleeps in between (no polling), and none without a sample hook.
#include "cache/core/process_sample.h"
#include "cache/events/event_log.h"
#include "cache/events/event_pipeline.h"
#include "event_lines.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <fcntl.h>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

using namespace gdrhook;

namespace {

double cpu_seconds()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval &t) { return t.tv_sec + t.tv_usec / 1e6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

} // namespace

TEST_CASE("a sample counts the process's resident bytes and open descriptors")
{
    CHECK(resident_bytes() > 0);
    uint64_t before = open_fd_count();
    CHECK(before > 0);
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    CHECK(open_fd_count() == before + 1);
    close(fd);
    CHECK(open_fd_count() == before);
}

TEST_CASE("sample lines carry rss_bytes, fds, pinned_bytes and pins after the common keys")
{
    ProcessSample sample;
    sample.rss_bytes = 123456789;
    sample.fds = 42;
    sample.pinned_bytes = 3 << 21;
    sample.pins = 3;
    Event e;
    e.kind = EventKind::sample;
    e.api = "gdrhook_worker";
    e.ts_ns = 5;
    e.seq = 17;
    e.tid = 8;
    e.sample = &sample;
    char buffer[max_line_size];
    std::string line(buffer, format_event_line(e, 7, buffer) - 1);
    CHECK(line == R"({"ts_ns":5,"seq":17,"pid":7,"tid":8,"ev":"sample","api":"gdrhook_worker",)"
                  R"("addr":"0x0","size":0,"dev":-1,"rc":0,"via":"symbol",)"
                  R"("rss_bytes":123456789,"fds":42,"pinned_bytes":6291456,"pins":3})");
}

TEST_CASE("the worker runs the sample hook about every interval and sleeps in between")
{
    std::string path = make_temp_dir() + "/samples.jsonl";
    EventLog log;
    REQUIRE(log.open(path).ok());
    EventPipeline pipeline(16, log, 1);
    std::atomic<int> samples{0};
    ProcessSample values;
    values.fds = 1;
    pipeline.set_sample_hook(20 * 1000 * 1000, [&] {
        ++samples;
        Event e;
        e.kind = EventKind::sample;
        e.api = "gdrhook_worker";
        e.sample = &values;
        pipeline.write_from_consumer(e);
    });
    // Nothing before the first event: the worker starts with it.
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    CHECK(samples == 0);

    Event e;
    e.kind = EventKind::alloc;
    e.api = "cuMemAlloc_v2";
    const double cpu_before = cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    pipeline.submit(e);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    pipeline.shutdown();
    const double elapsed_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const double cpu_ms = (cpu_seconds() - cpu_before) * 1000;

    INFO(samples << " samples in " << elapsed_ms << " ms, " << cpu_ms << " ms of CPU");
    // Generous bounds: a loaded 2-core machine may delay the worker, but
    // never makes it sample more often than the interval (plus the first,
    // at once), nor burn the CPU a polling loop would.
    CHECK(samples >= 3);
    CHECK(samples <= elapsed_ms / 20 + 2);
    CHECK(cpu_ms < 150);

    // The first sample may come before the event that started the worker
    // (the worker starts just before that event is queued).
    std::vector<EventLine> lines = read_event_file(path);
    REQUIRE(lines.size() == static_cast<size_t>(samples) + 1);
    size_t sample_lines = 0;
    for (const EventLine &line : lines) {
        CHECK(line.number("seq") == 0); // the only event's, as the last one taken
        if (line["ev"] == "sample") {
            ++sample_lines;
            CHECK(line.number("fds") == 1);
        } else {
            CHECK(line["ev"] == "alloc");
        }
    }
    CHECK(sample_lines == static_cast<size_t>(samples));
}

TEST_CASE("without a sample hook the worker writes only events")
{
    std::string path = make_temp_dir() + "/no-samples.jsonl";
    EventLog log;
    REQUIRE(log.open(path).ok());
    {
        EventPipeline pipeline(16, log, 1);
        Event e;
        e.kind = EventKind::free;
        e.api = "cuMemFree_v2";
        pipeline.submit(e);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        pipeline.shutdown();
    }
    std::vector<EventLine> lines = read_event_file(path);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]["ev"] == "free");
}
