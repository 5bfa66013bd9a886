// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/event_log.h"
#include "cache/events/event_pipeline.h"
#include "event_lines.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

using namespace gdrhook;

TEST_CASE("an event becomes one JSON line with the schema's keys")
{
    Event e;
    e.ts_ns = 1700000000123456789ull;
    e.seq = 5;
    e.tid = 77;
    e.kind = EventKind::free;
    e.api = "cuMemFree_v2";
    e.addr = 0x7f0000200000ull;
    e.size = 1 << 20;
    e.dev = 0;
    e.rc = 0;
    e.via = Via::proc_address;
    e.mem = MemoryKind::device;
    char buffer[max_line_size];
    size_t n = format_event_line(e, 1234, buffer);
    std::string line(buffer, n);
    REQUIRE(line.back() == '\n');
    line.pop_back();
    EventLine parsed;
    REQUIRE(parse_event_line(line, parsed));
    CHECK(parsed["ts_ns"] == "1700000000123456789");
    CHECK(parsed["pid"] == "1234");
    CHECK(parsed["tid"] == "77");
    CHECK(parsed["ev"] == "free");
    CHECK(parsed["api"] == "cuMemFree_v2");
    CHECK(parsed["addr"] == "0x7f0000200000");
    CHECK(parsed["size"] == "1048576");
    CHECK(parsed["dev"] == "0");
    CHECK(parsed["rc"] == "0");
    CHECK(parsed["via"] == "cuGetProcAddress");
    CHECK(parsed["kind"] == "device");
    CHECK_FALSE(parsed.has("lat_ns"));
}

TEST_CASE("unpin lines carry the handle and the delay from the free")
{
    Event e;
    e.kind = EventKind::unpin;
    e.api = "cuMemFree_v2";
    e.entry_id = 9;
    e.lat_ns = 12345;
    char buffer[max_line_size];
    std::string line(buffer, format_event_line(e, 1, buffer) - 1);
    EventLine parsed;
    REQUIRE(parse_event_line(line, parsed));
    CHECK(parsed["handle"] == "9");
    CHECK(parsed["lat_ns"] == "12345");
}

TEST_CASE("the pipeline writes every submitted event, in order, through the worker")
{
    std::string path = make_temp_dir() + "/log.jsonl";
    EventLog log;
    REQUIRE(log.open(path).ok());
    {
        EventPipeline pipeline(16, log, 99);
        std::vector<std::thread> producers;
        for (int t = 0; t < 4; ++t)
            producers.emplace_back([&, t] {
                for (int i = 0; i < 5000; ++i) {
                    Event e;
                    e.kind = EventKind::alloc;
                    e.api = "cuMemAlloc_v2";
                    e.dev = t;
                    e.size = static_cast<uint64_t>(i);
                    pipeline.submit(e);
                }
            });
        for (auto &p : producers)
            p.join();
        pipeline.shutdown();
        PipelineStats stats = pipeline.stats();
        CHECK(stats.written == 20000);
        CHECK(stats.pushed + stats.overflowed == 20000);
    }
    std::vector<EventLine> lines = read_event_file(path);
    REQUIRE(lines.size() == 20000);
    // Each producer's events in its order; every sequence number once.
    std::vector<long long> next(4, 0);
    std::vector<bool> seen(20000, false);
    size_t out_of_order = 0, duplicates = 0;
    for (const EventLine &line : lines) {
        long long producer = line.number("dev");
        if (line.number("size") != next[producer]++)
            ++out_of_order;
        long long seq = line.number("seq");
        if (seq < 0 || seq >= 20000 || seen[seq])
            ++duplicates;
        else
            seen[seq] = true;
    }
    CHECK(out_of_order == 0);
    CHECK(duplicates == 0);
}

TEST_CASE("events too big for a queue cell keep their place among the others")
{
    std::string path = make_temp_dir() + "/whole.jsonl";
    EventLog log;
    REQUIRE(log.open(path).ok());
    {
        EventPipeline pipeline(8, log, 7);
        std::vector<std::thread> producers;
        for (int t = 0; t < 3; ++t)
            producers.emplace_back([&, t] {
                for (int i = 0; i < 3000; ++i) {
                    Event e;
                    e.kind = EventKind::unpin;
                    e.api = "gdrhook_worker";
                    e.dev = t;
                    e.size = static_cast<uint64_t>(i);
                    if (i % 7 == 0)
                        e.lat_ns = 1000 + i; // the compact form has no room for it
                    pipeline.submit(e);
                }
            });
        for (auto &p : producers)
            p.join();
        pipeline.shutdown();
    }
    std::vector<EventLine> lines = read_event_file(path);
    REQUIRE(lines.size() == 9000);
    std::vector<long long> next(3, 0);
    std::vector<bool> seen(9000, false);
    size_t out_of_order = 0, duplicates = 0, wrong_delay = 0;
    for (const EventLine &line : lines) {
        long long producer = line.number("dev");
        long long i = line.number("size");
        if (i != next[producer]++)
            ++out_of_order;
        if (line.number("lat_ns") != (i % 7 == 0 ? 1000 + i : 0))
            ++wrong_delay;
        long long seq = line.number("seq");
        if (seq < 0 || seq >= 9000 || seen[seq])
            ++duplicates;
        else
            seen[seq] = true;
    }
    CHECK(out_of_order == 0);
    CHECK(duplicates == 0);
    CHECK(wrong_delay == 0);
}

TEST_CASE("a worker that fell asleep is woken by the next event")
{
    // With nothing queued the worker lingers about a millisecond, then
    // sleeps with no timeout (no samples here): an event that did not wake
    // it would wait for the shutdown. Each event waits out the linger first
    // and must then be written while the pipeline runs; the deadline only
    // ends a failing wait.
    std::string path = make_temp_dir() + "/wake.jsonl";
    EventLog log;
    REQUIRE(log.open(path).ok());
    EventPipeline pipeline(16, log, 5);
    for (uint64_t i = 1; i <= 5; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        Event e;
        e.kind = EventKind::alloc;
        e.api = "cuMemAlloc_v2";
        e.size = i;
        pipeline.submit(e);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (pipeline.stats().written < i && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        INFO("event " << i);
        REQUIRE(pipeline.stats().written == i);
    }
    // The case this test is about happened: a producer found the worker
    // asleep (the first event starts the worker instead).
    CHECK(pipeline.stats().wakeups >= 1);
    pipeline.shutdown();
}

namespace {

Event a_free(uint64_t address)
{
    Event e;
    e.kind = EventKind::free;
    e.api = "cuMemFree_v2";
    e.addr = address;
    return e;
}

} // namespace

TEST_CASE("after shutdown, events are written by the thread that submits them")
{
    std::string path = make_temp_dir() + "/late.jsonl";
    EventLog log;
    REQUIRE(log.open(path).ok());
    EventPipeline pipeline(4, log, 1);
    pipeline.shutdown();
    pipeline.submit(a_free(0));
    CHECK(read_event_file(path).size() == 1);
}

namespace {

// The scheduler state of one of our threads ('R', 'S', ...).
char thread_state(long tid)
{
    FILE *f = fopen(("/proc/self/task/" + std::to_string(tid) + "/stat").c_str(), "r");
    if (!f)
        return '?';
    char state = '?';
    // pid (comm) state ...: comm may hold spaces, the state follows its ')'.
    char line[512] = {};
    if (fgets(line, sizeof line, f)) {
        const char *close = strrchr(line, ')');
        if (close && close[1] == ' ')
            state = close[2];
    }
    fclose(f);
    return state;
}

} // namespace

TEST_CASE("once the process ends on one thread, other threads' events wait instead of being cut "
          "off mid-line")
{
    std::string path = make_temp_dir() + "/ending.jsonl";
    EventLog log;
    REQUIRE(log.open(path).ok());
    EventPipeline pipeline(4, log, 1);
    pipeline.close_for_process_end();
    pipeline.shutdown();

    std::atomic<long> tid{0};
    std::atomic<bool> returned{false};
    std::thread other([&] {
        tid = syscall(SYS_gettid);
        pipeline.submit(a_free(0x1000));
        returned = true;
    });
    // Until the other thread has either written or gone to sleep (the
    // gate's futex: nothing else here sleeps).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!returned && (!tid || thread_state(tid) != 'S') &&
           std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK_FALSE(returned);
    CHECK(read_event_file(path).empty());

    // The ending thread's own events (exit-time frees) are written.
    pipeline.submit(a_free(0x2000));
    std::vector<EventLine> lines = read_event_file(path);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]["addr"] == "0x2000");

    // An exec that failed: the process goes on, and so does the thread.
    pipeline.reopen_after_failed_exec();
    other.join();
    CHECK(returned);
    CHECK(read_event_file(path).size() == 2);
}

TEST_CASE("a process that does not end after its end call lets its threads write again")
{
    std::string path = make_temp_dir() + "/not_ending.jsonl";
    EventLog log;
    REQUIRE(log.open(path).ok());
    EventPipeline pipeline(4, log, 1);
    pipeline.set_ending_wait_ns(50ull * 1000 * 1000);
    pipeline.close_for_process_end();
    pipeline.shutdown();
    // Nothing reopens: each thread returns all the same, its event written.
    for (uint64_t address : {0x1000, 0x2000}) {
        std::thread other([&] { pipeline.submit(a_free(address)); });
        other.join();
    }
    CHECK(read_event_file(path).size() == 2);
}

TEST_CASE("an event log that cannot be opened says why")
{
    EventLog log;
    const Result<void> opened = log.open("/nonexistent-dir/x.jsonl");
    CHECK(opened.why().find("cannot open event log '/nonexistent-dir/x.jsonl'") == 0);
    CHECK(opened.system_error() == ENOENT);
    CHECK_FALSE(log.is_open());
}

TEST_CASE("the event log file appears with its first line, not before")
{
    std::string path = make_temp_dir() + "/lazy.jsonl";
    EventLog log;
    REQUIRE(log.open(path).ok());
    CHECK(log.is_open());
    CHECK(access(path.c_str(), F_OK) != 0); // a process that logs nothing leaves no file
    Event e;
    e.kind = EventKind::free;
    e.api = "cuMemFree_v2";
    log.write(e, 7);
    log.flush();
    CHECK(read_event_file(path).size() == 1);
}

TEST_CASE("a log past its byte cap writes no more events and ends with one line that counts them")
{
    std::string path = make_temp_dir() + "/capped.jsonl";
    const std::string first = "{\"ts_ns\":1,\"ev\":\"process\"}\n";
    // Events of two sizes; seq of three digits, so each size is one length.
    auto event = [](uint64_t seq, bool long_one) {
        Event e;
        e.kind = long_one ? EventKind::error : EventKind::free;
        e.api = "cuMemFree_v2";
        e.msg = long_one ? "a message long enough to make this line the longer one by far, "
                           "longer than any room the short lines leave under the cap"
                         : nullptr;
        e.seq = seq;
        return e;
    };
    char buffer[max_line_size];
    const uint64_t short_bytes = format_event_line(event(100, false), 7, buffer);
    const uint64_t long_bytes = format_event_line(event(100, true), 7, buffer);
    REQUIRE(long_bytes > short_bytes + 1);
    // Room for the first line and three short ones, and then for one more
    // short one, not for the long one that comes next.
    const uint64_t cap = first.size() + 4 * short_bytes + 1;

    EventLog log;
    REQUIRE(log.open(path).ok());
    log.set_max_bytes(cap);
    log.set_first_line([&first](int) { return first; });
    constexpr int events = 20;
    for (int i = 0; i < events; ++i)
        log.write(event(100 + static_cast<uint64_t>(i), i == 3), 7);
    log.flush();
    const uint64_t not_written = log.not_written();
    log.end_with_capped_line(7, 99);
    log.end_with_capped_line(7, 99); // said once

    FILE *f = std::fopen(path.c_str(), "r");
    REQUIRE(f);
    std::vector<std::string> lines;
    char text[4096];
    uint64_t bytes_before_last = 0;
    while (std::fgets(text, sizeof text, f))
        lines.emplace_back(text);
    std::fclose(f);
    REQUIRE(lines.size() >= 2);
    for (size_t i = 0; i + 1 < lines.size(); ++i)
        bytes_before_last += lines[i].size();
    CHECK(bytes_before_last <= cap);
    // The three short ones, then nothing: the log stops at the cap, and a
    // short line that would still fit after the long one is not written
    // either (no holes). Every event is written or counted.
    CHECK(lines.size() == 1 + 3 + 1);
    CHECK(not_written == events - 3);
    for (size_t i = 1; i + 1 < lines.size(); ++i) {
        EventLine written;
        std::string line = lines[i];
        line.pop_back();
        REQUIRE(parse_event_line(line, written));
        CHECK(written.number("seq") == static_cast<long long>(100 + i - 1));
    }
    EventLine last;
    std::string line = lines.back();
    line.pop_back();
    REQUIRE(parse_event_line(line, last));
    CHECK(last["ev"] == "capped");
    CHECK(last.number("not_written") == static_cast<long long>(not_written));
    CHECK(last.number("max_bytes") == static_cast<long long>(cap));
    CHECK(last.number("seq") == 99);
}

TEST_CASE("a log under its byte cap, or with none, ends with no capped line")
{
    for (uint64_t cap : {uint64_t{0}, uint64_t{1} << 20}) {
        std::string path = make_temp_dir() + "/whole.jsonl";
        EventLog log;
        REQUIRE(log.open(path).ok());
        log.set_max_bytes(cap);
        Event e;
        e.kind = EventKind::free;
        e.api = "cuMemFree_v2";
        for (int i = 0; i < 100; ++i)
            log.write(e, 7);
        log.end_with_capped_line(7, 1);
        log.flush();
        CHECK(log.not_written() == 0);
        CHECK(read_event_file(path).size() == 100);
    }
}
