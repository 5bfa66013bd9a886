// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `log summary` of a job with its lines parsed on worker threads
// (--threads, tools/cli/read/parse_ahead.h) prints what it prints without
// them, byte for byte: the summary, and every message on stderr in the
// same order, whatever the number of workers. And the one reader of every
// command hands out a job's events, and tells its malformed lines, in the
// order of reading one event of each file in turn, worked out here the
// plain way (the tests' oracle).
#include "log/log_commands.h"
#include "read/batched_reader.h"
#include "read/every_event.h"
#include "read/log_file_set.h"
#include "test_support.h"

#include <sys/resource.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <queue>
#include <sstream>

using namespace gdrhook::cli;
using namespace gdrhook::cli::test;

namespace {

// A directory in the temporary directory, removed with what it holds at
// the end of the test.
class TempDir {
public:
    TempDir()
    {
        const char *dir = std::getenv("TMPDIR");
        path_ = std::string(dir ? dir : "/tmp") + "/gdrhook-cli-test-XXXXXX";
        REQUIRE(mkdtemp(path_.data()) != nullptr);
    }
    ~TempDir() { std::filesystem::remove_all(path_); }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
    const std::string &path() const { return path_; }

private:
    std::string path_;
};

constexpr int job_files = 40;
constexpr int events_per_file = 400;
constexpr int64_t t0 = 1'000'000;

// Rank @p rank's log: its `process` line, then alloc, pin, unpin and free
// of a MiB over and over, at times interleaved with every other rank's (8
// ranks a host, with the pids of the other hosts' ranks), an error event
// now and then, and the lines a log may hold besides: malformed lines at
// places that differ from rank to rank (so that the messages of several
// files alternate on stderr), blank lines, CRLF line ends, and in some
// ranks a line over the length limit or an unfinished last line.
std::string rank_log(int rank)
{
    const int pid = 1000 + rank % 8;
    const char *end = rank % 5 == 0 ? "\r\n" : "\n";
    std::string text = process_line(t0 + rank, pid, "node" + std::to_string(rank / 8), rank) + end;
    for (int i = 0; i < events_per_file; ++i) {
        int64_t ts = t0 + 1000 + 1000 * int64_t(i) + (rank * 37) % 1000;
        uint64_t addr = 0x100000 * uint64_t(i / 4 + 1);
        std::string handle = R"(,"handle":)" + std::to_string(i / 4 + 1);
        std::string lat = R"(,"lat_ns":)" + std::to_string(100 + (i * 13 + rank) % 5000);
        switch (i % 4) {
        case 0:
            text +=
                line(ts, pid, "alloc", "cuMemAlloc_v2", addr, 1 << 20, 0, R"(,"kind":"device")");
            break;
        case 1:
            text += line(ts, pid, "pin", "cuMemAlloc_v2", addr, 1 << 20, 0,
                         R"(,"backend":"dmabuf")" + handle);
            break;
        case 2:
            text += line(ts, pid, "unpin", "cuMemFree_v2", addr, 1 << 20, 0, handle + lat);
            break;
        default: text += line(ts, pid, "free", "cuMemFree_v2", addr, 1 << 20); break;
        }
        text += end;
        if ((i + rank) % 97 == 0)
            text += line(ts, pid, "error", "cuMemAlloc_v2", addr, 0, 2,
                         R"(,"msg":"pin failed )" + std::to_string(rank % 3) + "\"") +
                    end;
        if ((i + 3 * rank) % 37 == 0)
            text += std::string(i % 2 ? R"({"ts_ns":5,"pid":)"
                                      : R"({"ts_ns":"late","pid":1,"tid":1})") +
                    end;
        if ((i + rank) % 71 == 5)
            text += std::string(end) + " \t" + end;
        if (rank == 7 && i == 150)
            text += std::string(LineReader::max_line + 10, 'x') + end;
    }
    if (rank % 13 == 3)
        text += R"({"ts_ns":)" + std::to_string(t0 + 999'999) + R"(,"pid":)"; // killed mid-line
    return text;
}

// The job's logs in @p dir, as the arguments name them: one that does not
// exist and an empty one among them (with files read in many batches, one
// that did not open once made BatchedLogReader crash).
std::vector<std::string> write_job(const std::string &dir)
{
    std::vector<std::string> paths;
    for (int rank = 0; rank < job_files; ++rank) {
        paths.push_back(dir + "/rank" + std::to_string(rank) + ".jsonl");
        std::ofstream(paths.back(), std::ios::binary) << rank_log(rank);
        if (rank == 11)
            paths.push_back(dir + "/missing/rank-gone.jsonl");
        if (rank == 23) {
            paths.push_back(dir + "/empty.jsonl");
            std::ofstream(paths.back(), std::ios::binary);
        }
    }
    return paths;
}

// What `gdrhook log summary` prints of @p files with @p threads workers:
// its exit status, the text summary and its stderr, then the same for
// --json. Batches of 64 steps a file (the least), so that each file is
// read in many batches.
std::string summarize(const std::vector<std::string> &files, unsigned threads, int64_t min_ts_ns)
{
    std::string all;
    for (bool json : {false, true}) {
        LogOptions options;
        options.files = files;
        options.json = json;
        options.min_ts_ns = min_ts_ns;
        options.threads = threads;
        options.step_budget = 64 * files.size();
        std::ostringstream out, err;
        int status = log_summary(options, out, err);
        all += "status " + std::to_string(status) + "\n--- stdout\n" + out.str() + "--- stderr\n" +
               err.str();
    }
    return all;
}

// What @p body returns, computed in a child process that may open no more
// than @p fds descriptors.
std::string with_descriptor_limit(rlim_t fds, const std::function<std::string()> &body)
{
    int channel[2];
    REQUIRE(pipe(channel) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        close(channel[0]);
        rlimit limit{fds, fds};
        std::string result = setrlimit(RLIMIT_NOFILE, &limit) == 0 ? body() : "setrlimit failed";
        for (size_t done = 0; done < result.size();) {
            ssize_t n = write(channel[1], result.data() + done, result.size() - done);
            if (n <= 0)
                _exit(1);
            done += static_cast<size_t>(n);
        }
        _exit(0);
    }
    close(channel[1]);
    std::string result;
    char buffer[65536];
    ssize_t n;
    while ((n = read(channel[0], buffer, sizeof buffer)) > 0)
        result.append(buffer, static_cast<size_t>(n));
    close(channel[0]);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    return result;
}

bool contains(const std::string &text, const std::string &part)
{
    return text.find(part) != std::string::npos;
}

// Whether a line of @p text holds both @p first and, after it, @p then.
bool has_line(const std::string &text, const std::string &first, const std::string &then)
{
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        size_t at = line.find(first);
        if (at != std::string::npos && line.find(then, at + first.size()) != std::string::npos)
            return true;
    }
    return false;
}

// Writes what a reader hands out and tells, one line each, in order.
class Transcript final : public MalformedLineSink {
public:
    void event(const LogEvent &event, const SourceLocation &where)
    {
        text += "event " + std::to_string(where.file) + ":" + std::to_string(where.line) + " ts " +
                std::to_string(event.ts_ns) + " " + std::string(event.ev) + "\n";
    }
    void malformed(uint32_t file, uint64_t line, const std::string &reason) override
    {
        text +=
            "malformed " + std::to_string(file) + ":" + std::to_string(line) + " " + reason + "\n";
    }
    void unfinished_last_line(uint32_t file, uint64_t line) override
    {
        text += "unfinished " + std::to_string(file) + ":" + std::to_string(line) + "\n";
    }
    std::string text;
};

// The oracle: each file read whole on its own, then one event of each file
// in turn, the earliest first (ts_ns, then the file named first), each file
// in its own order; a file's malformed lines told where a reader of one
// event at a time meets them: those before its first event as the files
// open, in their order, the others right after the event before them.
std::string read_plainly(const std::vector<std::string> &files, int64_t min_ts_ns)
{
    struct Item {
        LogEvent event;
        SourceLocation where;
        std::string told; // the file's lines told right after this event
    };
    struct File {
        std::string told_first;
        std::vector<Item> items;
        size_t next = 0;
    };
    std::vector<File> read(files.size());
    StringTable strings; // the events' names point into it
    for (size_t i = 0; i < files.size(); ++i) {
        Transcript lines; // what the file's reader tells, as it reads
        LogFileReader reader(static_cast<uint32_t>(i), strings, lines);
        if (!reader.open(files[i]).ok())
            continue;
        LogEvent event;
        SourceLocation where;
        for (;;) {
            bool more = reader.next(event, where);
            std::string &told =
                read[i].items.empty() ? read[i].told_first : read[i].items.back().told;
            told += lines.text;
            lines.text.clear();
            if (!more)
                break;
            if (event.ts_ns >= min_ts_ns)
                read[i].items.push_back({event, where, {}});
        }
    }
    std::string text;
    using Next = std::pair<int64_t, size_t>; // (ts_ns, file): the earliest on top
    std::priority_queue<Next, std::vector<Next>, std::greater<Next>> merge;
    for (size_t i = 0; i < read.size(); ++i) {
        text += read[i].told_first;
        if (!read[i].items.empty())
            merge.push({read[i].items.front().event.ts_ns, i});
    }
    while (!merge.empty()) {
        File &file = read[merge.top().second];
        merge.pop();
        const Item &item = file.items[file.next++];
        Transcript one;
        one.event(item.event, item.where);
        text += one.text + item.told;
        if (file.next < file.items.size())
            merge.push({file.items[file.next].event.ts_ns, static_cast<size_t>(item.where.file)});
    }
    return text;
}

// What the one reader hands out of @p files, every event whole (as `log
// check` reads them), with @p threads parsing ahead and @p steps held.
std::string read_with_the_one_reader(const std::vector<std::string> &files, int64_t min_ts_ns,
                                     size_t threads, size_t steps)
{
    Transcript transcript;
    EveryEvent every([&](const LogEvent &event, const SourceLocation &where) {
        transcript.event(event, where);
    });
    BatchedLogReader reader(files, transcript, every, threads, steps);
    reader.set_min_ts(min_ts_ns);
    reader.open();
    reader.run();
    return transcript.text;
}

} // namespace

TEST_CASE("every command's reader hands out a job's events and messages as one event of each file "
          "in turn would",
          "[job]")
{
    TempDir dir;
    std::vector<std::string> files = write_job(dir.path());
    for (int64_t min_ts_ns : {INT64_MIN, t0 + 150'000}) {
        INFO("min_ts_ns " << min_ts_ns);
        std::string plainly = read_plainly(files, min_ts_ns);
        // What the comparison is worth: events of many files, and every
        // kind of message.
        CHECK(contains(plainly, "event " + std::to_string(files.size() - 1) + ":"));
        CHECK(contains(plainly, " not JSON ("));
        CHECK(contains(plainly, " line longer than "));
        CHECK(contains(plainly, "unfinished "));
        // The files interleave: the last file's first event comes before
        // the first file's last.
        CHECK(plainly.find("event " + std::to_string(files.size() - 1) + ":") <
              plainly.rfind("event 0:"));
        for (size_t steps : {every_event_steps, 64 * files.size()}) {
            for (size_t threads : {0u, 3u}) {
                INFO("steps " << steps << ", threads " << threads);
                CHECK(read_with_the_one_reader(files, min_ts_ns, threads, steps) == plainly);
            }
        }
    }
}

TEST_CASE("a job's summary and messages are the same whatever the number of parsing threads",
          "[job]")
{
    TempDir dir;
    std::vector<std::string> files = write_job(dir.path());
    for (int64_t min_ts_ns : {INT64_MIN, t0 + 150'000}) {
        INFO("min_ts_ns " << min_ts_ns);
        std::string serial = summarize(files, 0, min_ts_ns);
        // What the comparison is worth: every kind of message is there.
        CHECK(contains(serial, "status 2\n"));
        CHECK(contains(serial, "rank12.jsonl:4: malformed line: not JSON"));
        CHECK(has_line(serial, "/rank7.jsonl:", ": malformed line: line longer than"));
        CHECK(has_line(serial, "/rank3.jsonl:", ": the last line stops short"));
        CHECK(contains(serial, "cannot open '" + dir.path() + "/missing/rank-gone.jsonl'"));
        CHECK(contains(serial, "\"by_host\""));
        for (unsigned threads : {1u, 3u, 8u}) {
            INFO("threads " << threads);
            CHECK(summarize(files, threads, min_ts_ns) == serial);
        }
    }
}

TEST_CASE("a job of more logs than the process may hold open reads the same with parsing threads",
          "[job]")
{
    TempDir dir;
    std::vector<std::string> files = write_job(dir.path());
    std::string serial = summarize(files, 0, INT64_MIN);
    // 8 files stay open; the others are opened again for each read, by
    // whichever thread reads them.
    rlim_t fds = LogFileSet::reserved_fds + 8;
    for (unsigned threads : {0u, 1u, 3u, 8u}) {
        INFO("threads " << threads);
        CHECK(with_descriptor_limit(fds, [&] { return summarize(files, threads, INT64_MIN); }) ==
              serial);
    }
}
