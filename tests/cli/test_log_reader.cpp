// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/batched_reader.h"
#include "read/every_event.h"
#include "read/malformed_line_report.h"
#include "test_support.h"

#include <cerrno>
#include <sstream>

using namespace gdrhook::cli;
using namespace gdrhook::cli::test;

namespace {

struct Collect : MalformedLineSink {
    void malformed(uint32_t file, uint64_t line, const std::string &reason) override
    {
        found.push_back({file, line, reason});
    }
    struct Entry {
        uint32_t file;
        uint64_t line;
        std::string reason;
    };
    std::vector<Entry> found;
};

struct Taken {
    uint64_t addr;
    SourceLocation where;
};

// What every command's reader hands out of @p paths, in order; the
// messages of the files that do not open in @p errors.
std::vector<Taken> read_in_order(std::vector<std::string> paths, MalformedLineSink &sink,
                                 std::vector<std::string> &errors, int64_t min_ts = INT64_MIN)
{
    std::vector<Taken> taken;
    EveryEvent every([&](const LogEvent &event, const SourceLocation &where) {
        taken.push_back({event.addr, where});
    });
    BatchedLogReader reader(std::move(paths), sink, every, 0, every_event_steps);
    reader.set_min_ts(min_ts);
    errors = reader.open();
    reader.run();
    return taken;
}

std::string parse_error(const std::string &text)
{
    StringTable strings;
    LineParser parser(strings);
    LogEvent event;
    return parser.parse(text, event);
}

} // namespace

TEST_CASE("a line with every key is parsed into its fields", "[reader]")
{
    StringTable strings;
    LineParser parser(strings);
    LogEvent e;
    REQUIRE(
        parser.parse(
            R"({"ts_ns":1795366155830512914,"seq":7,"pid":4398,"tid":4399,"ev":"unpin","api":"cuMemFree_v2","addr":"0x7f734569b000","size":67108864,"dev":0,"rc":0,"via":"symbol","backend":"dmabuf","handle":12,"lat_ns":4200,"kind":"device","msg":"x"})",
            e) == "");
    CHECK(e.ts_ns == 1795366155830512914);
    CHECK(e.seq == 7);
    CHECK(e.has_seq);
    CHECK(e.pid == 4398);
    CHECK(e.tid == 4399);
    CHECK(e.kind == EventKind::unpin);
    CHECK(e.api == "cuMemFree_v2");
    CHECK(e.addr == 0x7f734569b000);
    CHECK(e.size == 67108864);
    CHECK(e.dev == 0);
    CHECK(e.rc == 0);
    CHECK(e.via == "symbol");
    CHECK(e.backend == "dmabuf");
    CHECK(e.has_entry_id);
    CHECK(e.entry_id == 12);
    CHECK(e.has_lat);
    CHECK(e.lat_ns == 4200);
    CHECK(e.mem_kind == "device");
    CHECK(e.msg == "x");
}

TEST_CASE("unknown keys and unknown event kinds are accepted and ignored", "[reader]")
{
    StringTable strings;
    LineParser parser(strings);
    LogEvent e;
    REQUIRE(
        parser.parse(
            R"({"new":{"a":[1,{"b":null}]},"ts_ns":1,"pid":2,"tid":3,"ev":"teleport","api":"x","addr":"0x10","size":0,"dev":-1,"rc":0,"later":true})",
            e) == "");
    CHECK(e.kind == EventKind::unknown);
    CHECK(e.ev == "teleport");
    CHECK(e.addr == 0x10);
    CHECK(e.dev == -1);
}

TEST_CASE("a sample's measurements are parsed, and a sample is its own kind", "[reader]")
{
    StringTable strings;
    LineParser parser(strings);
    LogEvent e;
    REQUIRE(
        parser.parse(
            R"({"ts_ns":5,"seq":3,"pid":7,"tid":8,"ev":"sample","api":"gdrhook_worker","addr":"0x0","size":0,"dev":-1,"rc":0,"via":"symbol","rss_bytes":123456789,"fds":42,"pinned_bytes":6291456,"pins":3})",
            e) == "");
    CHECK(e.kind == EventKind::sample);
    CHECK(e.has_rss);
    CHECK(e.rss_bytes == 123456789);
    CHECK(e.has_fds);
    CHECK(e.fds == 42);
    CHECK(e.pinned_bytes == 6291456);
    CHECK(e.pins == 3);
    CHECK(
        parse_error(
            R"({"ts_ns":5,"pid":7,"tid":8,"ev":"sample","api":"w","addr":"0x0","size":0,"dev":-1,"rc":0,"fds":"9"})") ==
        "key \"fds\": expected a non-negative integer");
}

TEST_CASE("a malformed line is described precisely", "[reader]")
{
    const std::string ok_tail = R"("ev":"alloc","api":"a","addr":"0x1","size":1,"dev":0,"rc":0})";
    CHECK(parse_error(R"({"ts_ns":1,"pid":2,"tid":3,)" + ok_tail) == "");
    CHECK(parse_error(R"({"ts_ns":1,"tid":3,)" + ok_tail) == "missing required key \"pid\"");
    CHECK(parse_error(R"({"ts_ns":"soon","pid":2,"tid":3,)" + ok_tail) ==
          "key \"ts_ns\": expected an integer");
    CHECK(
        parse_error(
            R"({"ts_ns":1,"pid":2,"tid":3,"ev":"alloc","api":"a","addr":"0xZZ","size":1,"dev":0,"rc":0})")
            .find("expected a hex address") != std::string::npos);
    CHECK(
        parse_error(
            R"({"ts_ns":1,"pid":2,"tid":3,"ev":"alloc","api":"a","addr":"0x1","size":-5,"dev":0,"rc":0})")
            .find("key \"size\"") == 0);
    CHECK(parse_error(R"({"ts_ns":1,"pid":2,"tid":3,"ev":"alloc")").find("not JSON") == 0);
    CHECK(parse_error(R"({"ts_ns":1,"pid":2,"tid":3,)" + ok_tail + " {}").find("not JSON") == 0);
    CHECK(parse_error("[1,2]") == "not a JSON object");
    CHECK(parse_error("42") == "not a JSON object");
}

TEST_CASE("the file reader reports malformed lines with their numbers and reads on", "[reader]")
{
    std::string good = line(1, 1, "alloc", "cuMemAlloc_v2", 0x1000, 10);
    TempFile file(good + "\n{oops\n\n" + good + "\r\n" +
                  std::string(LineReader::max_line + 10, 'x') + "\n" +
                  good); // no newline at the end
    Collect sink;
    StringTable strings;
    LogFileReader reader(3, strings, sink);
    REQUIRE(reader.open(file.path()).ok());
    LogEvent event;
    SourceLocation where;
    std::vector<uint64_t> lines;
    while (reader.next(event, where)) {
        CHECK(where.file == 3);
        lines.push_back(where.line);
    }
    CHECK(lines == std::vector<uint64_t>{1, 4, 6});
    REQUIRE(sink.found.size() == 2);
    CHECK(sink.found[0].line == 2);
    CHECK(sink.found[1].line == 5);
    CHECK(sink.found[1].reason.find("longer than") != std::string::npos);
}

TEST_CASE("a file that cannot be opened is an error naming it", "[reader]")
{
    Collect sink;
    StringTable strings;
    LogFileReader reader(0, strings, sink);
    gdrhook::Status status = reader.open("/nonexistent/gdrhook.jsonl");
    REQUIRE_FALSE(status.ok());
    CHECK(status.code == gdrhook::StatusCode::io_error);
    CHECK(status.detail == ENOENT);
    std::string message = file_error("/nonexistent/gdrhook.jsonl", status);
    CHECK(message == "cannot open '/nonexistent/gdrhook.jsonl': No such file or directory");
}

TEST_CASE("several files merge by timestamp, each keeping its own order", "[reader]")
{
    TempFile a(line(10, 1, "alloc", "x", 1, 1) + "\n" + line(30, 1, "alloc", "x", 2, 1) + "\n" +
               line(25, 1, "alloc", "x", 3, 1) + "\n");
    TempFile b(line(20, 2, "alloc", "x", 4, 1) + "\n" + line(40, 2, "alloc", "x", 5, 1) + "\n");
    Collect sink;
    std::vector<std::string> errors;
    std::vector<Taken> taken = read_in_order({a.path(), b.path(), "/nonexistent"}, sink, errors);
    REQUIRE(errors.size() == 1);
    REQUIRE(taken.size() == 5);
    std::vector<uint64_t> order;
    for (const Taken &t : taken)
        order.push_back(t.addr);
    // 25 comes after 30: within one file the file's order wins.
    CHECK(order == std::vector<uint64_t>{1, 4, 2, 3, 5});
    // Each with its own line.
    CHECK(taken[1].where.file == 1);
    CHECK(taken[1].where.line == 1);
    CHECK(taken[3].where.file == 0);
    CHECK(taken[3].where.line == 3);
}

TEST_CASE("events before the minimum time are skipped", "[reader]")
{
    TempFile a(line(10, 1, "alloc", "x", 1, 1) + "\n" + line(30, 1, "alloc", "x", 2, 1) + "\n");
    Collect sink;
    std::vector<std::string> errors;
    std::vector<Taken> taken = read_in_order({a.path()}, sink, errors, 20);
    REQUIRE(errors.empty());
    REQUIRE(taken.size() == 1);
    CHECK(taken[0].addr == 2);
    CHECK(taken[0].where.line == 2);
}

TEST_CASE("the malformed-line report names file and line, and caps its output", "[reader]")
{
    std::ostringstream out;
    std::vector<std::string> paths{"a.jsonl"};
    MalformedLineReport report(out, paths);
    for (uint64_t i = 1; i <= MalformedLineReport::shown_per_file + 5; ++i)
        report.malformed(0, i, "bad");
    report.finish();
    CHECK(report.total() == MalformedLineReport::shown_per_file + 5);
    CHECK(out.str().find("a.jsonl:1: malformed line: bad\n") == 0);
    CHECK(out.str().find("a.jsonl: 5 more malformed line(s) not shown") != std::string::npos);
}

TEST_CASE("the string table is bounded", "[reader]")
{
    StringTable table(2);
    auto a = table.intern("a");
    CHECK(table.intern(std::string("a")).data() == a.data());
    table.intern("b");
    CHECK(table.intern("c") == StringTable::overflow_name);
    CHECK(table.size() == 2);
}

TEST_CASE("a small buffer grows for a long line and still skips one over the limit", "[reader]")
{
    std::string long_line(5000, 'x'), too_long(LineReader::max_line + 10, 'y');
    TempFile file("a\n" + long_line + "\n" + too_long + "\nb\n");
    LineReader reader(16, 1024);
    REQUIRE(reader.open(file.path()).ok());
    std::vector<std::string> lines;
    LineReader::Line line;
    while (reader.next(line))
        lines.push_back(line.too_long ? "(too long)" : std::string(line.data, line.size));
    CHECK(lines == std::vector<std::string>{"a", long_line, "(too long)", "b"});
}

TEST_CASE("a file closed between reads is read to its end, at its offset each time", "[reader]")
{
    std::string text;
    for (int i = 0; i < 2000; ++i)
        text += line(i, 1, "alloc", "cuMemAlloc_v2", 0x1000 + static_cast<uint64_t>(i), 1) + "\n";
    TempFile file(text);
    Collect sink;
    StringTable strings;
    LineParser parser(strings);
    LogFileReader reader(0, parser, sink, 4096); // about 25 lines a read
    reader.close_between_reads();
    REQUIRE(reader.open(file.path()).ok());
    LogEvent event;
    SourceLocation where;
    uint64_t count = 0;
    bool in_order = true;
    while (reader.next(event, where))
        in_order &= event.addr == 0x1000 + count++ && where.line == count;
    CHECK(count == 2000);
    CHECK(in_order);
    CHECK(sink.found.empty());
    CHECK(reader.bytes_read() == text.size());
}
