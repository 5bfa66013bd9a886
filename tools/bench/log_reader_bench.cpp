// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// How fast the tool reads event logs, and in how much memory.
//
//   gdrhook-log-bench [--lines N] [--file PATH] [--keep]
//   gdrhook-log-bench --job [--job-files F] [--job-events E] [--dir DIR] [--keep] [--reuse] [--runs N]
//
// One file (the default): writes a synthetic log of N lines (default 10
// million, about 2.3 GB) in the shim's format: four threads allocating and
// freeing with at most 4096 allocations live, every large one pinned and
// unpinned. Then reads it twice: parsing only (the reader), and parsing
// plus the whole summary (what `gdrhook log summary` does). Prints MB/s,
// lines/s and the peak resident set size.
//
// A job (--job): writes the logs of F ranks (default 1,024), 8 to a host,
// in DIR/<host>/rank<R>.jsonl, each a `process` line and E events (default
// 10,000) over the same span of time, so the merge interleaves them all;
// the ranks of a host have the pids the ranks of every other host have.
// Then one file of the same F * E events. Each is summarized by
// `gdrhook log summary`'s own code in a child process, whose peak resident
// set size (ru_maxrss) and CPU time are its own: the job's against the
// single file's, MB/s against MB/s. The two alternate N times (default 3)
// and the medians are compared, since other work on the machine moves a
// single run by more than the difference; --reuse reads the logs an
// earlier --keep left in DIR instead of writing them again.
//
// The files are read right after they are written, so they come from the
// page cache: this measures the reader, not the disk.
#include "log/log_commands.h"
#include "median.h"
#include "read/batched_reader.h"
#include "read/every_event.h"
#include "report/summary.h"

#include <CLI/CLI.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <vector>

using namespace gdrhook::cli;
using bench::median;

namespace {

class NullSink : public MalformedLineSink {
public:
    void malformed(uint32_t, uint64_t, const std::string &) override { ++count; }
    uint64_t count = 0;
};

// Writes one process's events in the shim's format.
class LogWriter {
public:
    LogWriter(FILE *file, int pid, uint64_t seed, int64_t t0)
        : file_(file), pid_(pid), x_(seed), ts_(t0), live_(live_max, 0), live_size_(live_max, 0)
    {}

    void process_line(const std::string &host, int rank)
    {
        std::fprintf(
            file_,
            "{\"ts_ns\":%" PRId64
            ",\"seq\":0,\"pid\":%d,\"tid\":%d,\"ev\":\"process\",\"api\":\"gdrhook\",\"addr\":"
            "\"0x0\",\"size\":0,\"dev\":-1,\"rc\":0,\"via\":\"symbol\",\"host\":\"%s\",\"rank\":%d,"
            "\"rank_from\":\"RANK\",\"ppid\":%d,\"cmdline\":[\"python3\",\"train.py\",\"--steps\","
            "\"300\"],\"version\":\"0.1.0\",\"config\":{\"GDRHOOK_BACKEND\":\"dmabuf\",\"GDRHOOK_"
            "EVENTS\":\"/shared/job/%%h/"
            "rank%%r.jsonl\",\"GDRHOOK_PIN\":\"alloc\"},\"driver_version\":13000,\"devices\":[{"
            "\"ordinal\":%d,\"name\":\"NVIDIA H100 80GB "
            "HBM3\",\"uuid\":\"GPU-%08d-0000-0000-0000-000000000000\",\"pci_bus_id\":\"0000:19:00."
            "0\"}],\"clock\":{\"source\":\"tsc\",\"realtime_ns\":%" PRId64
            ",\"monotonic_ns\":1000,\"tsc\":2000,\"tsc_hz\":2000000000}}\n",
            ts_, pid_, pid_, host.c_str(), rank, pid_ - 1, rank % 8, rank, ts_);
    }

    // Writes at least @p lines lines; returns how many.
    uint64_t events(uint64_t lines)
    {
        uint64_t written = 0;
        while (written < lines) {
            size_t slot = rnd() % live_max;
            int tid = pid_ + static_cast<int>(rnd() % 4);
            ts_ += 1000 + static_cast<int64_t>(rnd() % 5000);
            if (live_[slot]) {
                uint64_t addr = live_[slot], size = live_size_[slot];
                bool pinned = size >= (1u << 20);
                line_start(ts_, tid, "free", "cuMemFree_v2", addr, size);
                std::fprintf(file_, "\"kind\":\"device\"}\n");
                ++written;
                if (pinned) {
                    line_start(ts_ + 9000, pid_ + 9, "unpin", "cuMemFree_v2", addr, size);
                    std::fprintf(file_,
                                 "\"backend\":\"dmabuf\",\"handle\":%zu,\"lat_ns\":%" PRIu64 "}\n",
                                 slot + 1, 3000 + rnd() % 40000);
                    ++written;
                }
                live_[slot] = 0;
                continue;
            }
            uint64_t size = (rnd() % 2) ? (1u << 20) << (rnd() % 6) : 4096u << (rnd() % 6);
            bool pinned = size >= (1u << 20);
            uint64_t addr = next_addr_;
            next_addr_ += 1ull << 26;
            live_[slot] = addr;
            live_size_[slot] = size;
            line_start(ts_, tid, "alloc", "cuMemAlloc_v2", addr, size);
            std::fprintf(file_, "\"kind\":\"device\"}\n");
            ++written;
            if (pinned) {
                line_start(ts_ + 20000, pid_ + 9, "pin", "cuMemAlloc_v2", addr, size);
                std::fprintf(file_, "\"backend\":\"dmabuf\",\"handle\":%zu}\n", slot + 1);
                ++written;
            }
        }
        return written;
    }

private:
    static constexpr size_t live_max = 4096;
    uint64_t rnd()
    {
        x_ ^= x_ << 13; // xorshift: deterministic sizes
        x_ ^= x_ >> 7;
        x_ ^= x_ << 17;
        return x_;
    }

    // Writes the fields every memory event's line opens with, up to its
    // own (kind, or backend and handle).
    void line_start(int64_t ts, int tid, const char *ev, const char *api, uint64_t addr,
                    uint64_t size)
    {
        std::fprintf(file_,
                     "{\"ts_ns\":%" PRId64 ",\"seq\":%" PRIu64
                     ",\"pid\":%d,\"tid\":%d,\"ev\":\"%s\",\"api\":\"%s\",\"addr\":\"0x%" PRIx64
                     "\",\"size\":%" PRIu64 ",\"dev\":0,\"rc\":0,\"via\":\"cuGetProcAddress\",",
                     ts, ++seq_, pid_, tid, ev, api, addr, size);
    }

    FILE *file_;
    int pid_;
    uint64_t x_;
    int64_t ts_;
    uint64_t seq_ = 0;
    uint64_t next_addr_ = 0x7f0000000000;
    std::vector<uint64_t> live_, live_size_;
};

constexpr int64_t t0 = 1795366155830512914;

// Opens @p path for writing with a large buffer, runs @p write, closes.
template <typename Write> bool write_file(const std::string &path, Write &&write)
{
    FILE *file = std::fopen(path.c_str(), "w");
    if (!file) {
        std::perror(path.c_str());
        return false;
    }
    static char buffer[1 << 20];
    std::setvbuf(file, buffer, _IOFBF, sizeof buffer);
    write(file);
    bool ok = std::fflush(file) == 0;
    ok = std::fclose(file) == 0 && ok;
    if (!ok)
        std::perror(path.c_str());
    return ok;
}

double peak_rss_mib()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0; // ru_maxrss is in KiB
}

template <typename Consumer>
void measure(const char *what, const std::string &path, Consumer &&consume)
{
    NullSink sink;
    uint64_t events = 0;
    // Every event whole, as `log check` reads them (the one reader).
    EveryEvent every([&](const LogEvent &event, const SourceLocation &where) {
        consume(event, where);
        ++events;
    });
    BatchedLogReader reader({path}, sink, every, 0, every_event_steps);
    for (const auto &error : reader.open())
        std::cerr << error << '\n';
    auto start = std::chrono::steady_clock::now();
    reader.run();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double mb = static_cast<double>(reader.bytes_read()) / 1e6;
    std::printf("%-24s %10.0f MB in %6.2f s: %7.1f MB/s, %5.2f M lines/s (%" PRIu64
                " events, %" PRIu64 " malformed); peak RSS so far %.1f MiB\n",
                what, mb, seconds, mb / seconds, static_cast<double>(events) / seconds / 1e6,
                events, sink.count, peak_rss_mib());
}

int single_file(const std::string &path, uint64_t lines, bool keep)
{
    std::printf("generating %" PRIu64 " lines into %s ...\n", lines, path.c_str());
    if (!write_file(path, [&](FILE *file) {
            LogWriter(file, 4242, 88172645463325252ull, t0).events(lines);
        }))
        return 1;
    std::printf("peak RSS after generating: %.1f MiB\n", peak_rss_mib());

    measure("parse only", path, [](const LogEvent &, const SourceLocation &) {});
    SummaryBuilder builder;
    measure("parse + summary", path,
            [&](const LogEvent &event, const SourceLocation &where) { builder.add(event, where); });
    Summary summary = builder.finish(1, 0, 0);
    std::printf("summary: %" PRIu64 " events, peak live %" PRIu64 " bytes, %" PRIu64
                " unpins (p50 %" PRId64 " ns)\n",
                summary.events, summary.peak_live_gpu_bytes, summary.unpin_delay.count(),
                summary.unpin_delay.percentile(0.5));
    if (!keep)
        unlink(path.c_str());
    return 0;
}

struct Run {
    bool ok = false;
    double seconds = 0;
    double cpu_seconds = 0; // user + system
    double max_rss_mib = 0;
};

// `gdrhook log summary ARGUMENT` in a child process: its own wall time,
// CPU time and peak RSS.
Run summarize_in_child(const std::string &argument)
{
    auto start = std::chrono::steady_clock::now();
    pid_t pid = fork();
    if (pid == 0) {
        LogOptions options;
        options.files = {argument};
        std::ostringstream out, err;
        int rc = log_summary(options, out, err);
        if (rc != 0)
            std::fputs(err.str().c_str(), stderr);
        _exit(rc);
    }
    Run run;
    int status = 0;
    rusage usage{};
    if (pid < 0 || wait4(pid, &status, 0, &usage) != pid)
        return run;
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    run.max_rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
    auto seconds = [](const timeval &t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    run.cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    return run;
}

uint64_t bytes_under(const std::string &path)
{
    uint64_t total = 0;
    namespace fs = std::filesystem;
    if (fs::is_regular_file(path))
        return fs::file_size(path);
    for (const auto &entry : fs::recursive_directory_iterator(path))
        if (entry.is_regular_file())
            total += entry.file_size();
    return total;
}

bool write_job(const std::string &dir, int files, uint64_t events)
{
    namespace fs = std::filesystem;
    std::printf("generating %d logs of %" PRIu64 " events (8 ranks a host) under %s ...\n", files,
                events, dir.c_str());
    uint64_t total_lines = 0;
    for (int rank = 0; rank < files; ++rank) {
        char host[32];
        std::snprintf(host, sizeof host, "node%03d", rank / 8);
        fs::create_directories(fs::path(dir) / "job" / host);
        std::string path =
            (fs::path(dir) / "job" / host / ("rank" + std::to_string(rank) + ".jsonl")).string();
        bool ok = write_file(path, [&](FILE *file) {
            LogWriter writer(file, 4242 + rank % 8,
                             88172645463325252ull + static_cast<uint64_t>(rank) * 7919, t0);
            writer.process_line(host, rank);
            total_lines += 1 + writer.events(events);
        });
        if (!ok)
            return false;
    }
    std::string single = (fs::path(dir) / "single.jsonl").string();
    std::printf("generating one log of %" PRIu64 " events into %s ...\n", total_lines,
                single.c_str());
    return write_file(single, [&](FILE *file) {
        LogWriter(file, 4242, 88172645463325252ull, t0).events(total_lines);
    });
}

int job(const std::string &dir, int files, uint64_t events, bool keep, bool reuse, int runs)
{
    namespace fs = std::filesystem;
    if (!reuse && !write_job(dir, files, events))
        return 1;
    std::string single = (fs::path(dir) / "single.jsonl").string();
    std::string job_dir = (fs::path(dir) / "job").string();
    double single_mb = static_cast<double>(bytes_under(single)) / 1e6;
    double job_mb = static_cast<double>(bytes_under(job_dir)) / 1e6;
    size_t job_files = 0;
    for (const auto &entry : fs::recursive_directory_iterator(job_dir))
        job_files += entry.is_regular_file();
    char job_what[64];
    std::snprintf(job_what, sizeof job_what, "summary of the job (%zu files)", job_files);
    auto report = [](const char *what, double mb, const Run &run) {
        std::printf("%-36s %8.0f MB in %6.2f s: %7.1f MB/s; %6.2f s of CPU; max RSS %6.1f MiB%s\n",
                    what, mb, run.seconds, mb / run.seconds, run.cpu_seconds, run.max_rss_mib,
                    run.ok ? "" : " (FAILED)");
    };
    // A forked child's ru_maxrss counts the pages it shares with this
    // process too; `/usr/bin/time -v gdrhook log summary DIR` has none.
    std::printf("this process's own peak RSS before forking: %.1f MiB\n", peak_rss_mib());
    // One file, then the job, then again: what else runs on the machine
    // weighs on both alike.
    std::vector<double> single_speed, job_speed, ratio, single_cpu, job_cpu;
    double max_rss = 0;
    bool ok = true;
    for (int i = 0; i < runs; ++i) {
        Run one = summarize_in_child(single);
        report("summary of one file", single_mb, one);
        Run all = summarize_in_child(job_dir);
        report(job_what, job_mb, all);
        ok = ok && one.ok && all.ok;
        single_speed.push_back(single_mb / one.seconds);
        job_speed.push_back(job_mb / all.seconds);
        ratio.push_back(job_speed.back() / single_speed.back());
        single_cpu.push_back(single_mb / one.cpu_seconds);
        job_cpu.push_back(job_mb / all.cpu_seconds);
        max_rss = std::max(max_rss, all.max_rss_mib);
    }
    std::printf(
        "median of %d: job %.1f MB/s, one file %.1f MB/s: %.2f of the speed (median of the runs' "
        "ratios); per CPU second: job %.1f MB, one file %.1f MB: %.2f; job's max RSS %.1f MiB\n",
        runs, median(job_speed), median(single_speed), median(ratio), median(job_cpu),
        median(single_cpu), median(job_cpu) / median(single_cpu), max_rss);
    std::printf("target: <= 256 MiB, >= 1.00 of the speed: %s\n",
                ok && max_rss <= 256 && median(ratio) >= 1.0 ? "met" : "NOT met");
    if (!keep)
        fs::remove_all(fs::path(dir));
    return ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv)
{
    uint64_t lines = 10'000'000;
    std::string path = "/tmp/gdrhook-log-bench-" + std::to_string(getpid()) + ".jsonl";
    std::string dir = "/tmp/gdrhook-log-bench-" + std::to_string(getpid());
    bool keep = false, as_job = false, reuse = false;
    int job_files = 1024, runs = 3;
    uint64_t job_events = 10'000;
    CLI::App app{"gdrhook-log-bench: event log reading throughput and memory"};
    app.add_option("--lines", lines, "lines to generate (one file)")->capture_default_str();
    app.add_option("--file", path, "where to write the log (one file)")->capture_default_str();
    app.add_flag("--job", as_job, "the logs of a job, and one file of as many events");
    app.add_option("--job-files", job_files, "logs of the job (--job)")->capture_default_str();
    app.add_option("--job-events", job_events, "events per log (--job)")->capture_default_str();
    app.add_option("--dir", dir, "where to write the job's logs (--job)")->capture_default_str();
    app.add_flag("--keep", keep, "keep the files afterwards");
    app.add_flag("--reuse", reuse, "read the logs an earlier --job --keep left in --dir (--job)");
    app.add_option("--runs", runs, "summaries of each, alternating (--job)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &error) {
        return app.exit(error);
    }
    return as_job ? job(dir, job_files, job_events, keep || reuse, reuse, runs)
                  : single_file(path, lines, keep);
}
