// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// How fast the tool reads event logs, and in how much memory.
//
//   gdrhook-log-bench [--lines N] [--file PATH] [--keep]
//
// Writes a synthetic log of N lines (default 10 million, about 2.3 GB) in
// the shim's format: four threads allocating and freeing with at most 4096
// allocations live, every large one pinned and unpinned. Then reads it
// twice: parsing only (the reader), and parsing plus the whole summary
// (what `gdrhook log summary` does). Prints MB/s, lines/s and the peak
// resident set size. The file is read right after it is written, so it
// comes from the page cache: this measures the parser, not the disk.
#include "merged_reader.h"
#include "summary.h"

#include <CLI/CLI.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <vector>

using namespace gdrhook::cli;

namespace {

class NullSink : public MalformedLineSink {
public:
    void malformed(uint32_t, uint64_t, const std::string &) override { ++count; }
    uint64_t count = 0;
};

bool generate(const std::string &path, uint64_t lines)
{
    FILE *file = std::fopen(path.c_str(), "w");
    if (!file) {
        std::perror(path.c_str());
        return false;
    }
    static char buffer[1 << 20];
    std::setvbuf(file, buffer, _IOFBF, sizeof buffer);
    const int pid = 4242;
    const size_t live_max = 4096;
    std::vector<uint64_t> live(live_max, 0), live_size(live_max, 0);
    int64_t ts = 1795366155830512914;
    uint64_t seq = 0, handle = 0, next_addr = 0x7f0000000000;
    uint64_t written = 0;
    uint64_t x = 88172645463325252ull; // xorshift: deterministic sizes
    auto rnd = [&] { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x; };
    while (written < lines) {
        size_t slot = rnd() % live_max;
        int tid = pid + static_cast<int>(rnd() % 4);
        ts += 1000 + static_cast<int64_t>(rnd() % 5000);
        if (live[slot]) {
            uint64_t addr = live[slot], size = live_size[slot];
            bool pinned = size >= (1u << 20);
            std::fprintf(file,
                         "{\"ts_ns\":%" PRId64 ",\"seq\":%" PRIu64 ",\"pid\":%d,\"tid\":%d,\"ev\":\"free\",\"api\":\"cuMemFree_v2\",\"addr\":\"0x%" PRIx64 "\",\"size\":%" PRIu64 ",\"dev\":0,\"rc\":0,\"via\":\"cuGetProcAddress\",\"kind\":\"device\"}\n",
                         ts, ++seq, pid, tid, addr, size);
            ++written;
            if (pinned) {
                std::fprintf(file,
                             "{\"ts_ns\":%" PRId64 ",\"seq\":%" PRIu64 ",\"pid\":%d,\"tid\":%d,\"ev\":\"unpin\",\"api\":\"cuMemFree_v2\",\"addr\":\"0x%" PRIx64 "\",\"size\":%" PRIu64 ",\"dev\":0,\"rc\":0,\"via\":\"cuGetProcAddress\",\"backend\":\"dmabuf\",\"handle\":%" PRIu64 ",\"lat_ns\":%" PRIu64 "}\n",
                             ts + 9000, ++seq, pid, pid + 9, addr, size, slot + 1, 3000 + rnd() % 40000);
                ++written;
            }
            live[slot] = 0;
            continue;
        }
        uint64_t size = (rnd() % 2) ? (1u << 20) << (rnd() % 6) : 4096u << (rnd() % 6);
        bool pinned = size >= (1u << 20);
        uint64_t addr = next_addr;
        next_addr += 1ull << 26;
        live[slot] = addr;
        live_size[slot] = size;
        std::fprintf(file,
                     "{\"ts_ns\":%" PRId64 ",\"seq\":%" PRIu64 ",\"pid\":%d,\"tid\":%d,\"ev\":\"alloc\",\"api\":\"cuMemAlloc_v2\",\"addr\":\"0x%" PRIx64 "\",\"size\":%" PRIu64 ",\"dev\":0,\"rc\":0,\"via\":\"cuGetProcAddress\",\"kind\":\"device\"}\n",
                     ts, ++seq, pid, tid, addr, size);
        ++written;
        if (pinned) {
            ++handle;
            std::fprintf(file,
                         "{\"ts_ns\":%" PRId64 ",\"seq\":%" PRIu64 ",\"pid\":%d,\"tid\":%d,\"ev\":\"pin\",\"api\":\"cuMemAlloc_v2\",\"addr\":\"0x%" PRIx64 "\",\"size\":%" PRIu64 ",\"dev\":0,\"rc\":0,\"via\":\"cuGetProcAddress\",\"backend\":\"dmabuf\",\"handle\":%zu}\n",
                         ts + 20000, ++seq, pid, pid + 9, addr, size, slot + 1);
            ++written;
        }
    }
    bool ok = std::fflush(file) == 0;
    ok = std::fclose(file) == 0 && ok;
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
    MergedLogReader reader({path}, sink);
    for (const auto &error : reader.open())
        std::cerr << error << '\n';
    auto start = std::chrono::steady_clock::now();
    uint64_t events = 0;
    SourceLocation where;
    while (const LogEvent *event = reader.next(where)) {
        consume(*event, where);
        ++events;
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double mb = static_cast<double>(reader.bytes_read()) / 1e6;
    std::printf("%-24s %10.0f MB in %6.2f s: %7.1f MB/s, %5.2f M lines/s (%" PRIu64
                " events, %" PRIu64 " malformed); peak RSS so far %.1f MiB\n",
                what, mb, seconds, mb / seconds, static_cast<double>(events) / seconds / 1e6,
                events, sink.count, peak_rss_mib());
}

} // namespace

int main(int argc, char **argv)
{
    uint64_t lines = 10'000'000;
    std::string path = "/tmp/gdrhook-log-bench-" + std::to_string(getpid()) + ".jsonl";
    bool keep = false;
    CLI::App app{"gdrhook-log-bench: event log reading throughput and memory"};
    app.add_option("--lines", lines, "lines to generate")->capture_default_str();
    app.add_option("--file", path, "where to write the log")->capture_default_str();
    app.add_flag("--keep", keep, "keep the file afterwards");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &error) {
        return app.exit(error);
    }

    std::printf("generating %" PRIu64 " lines into %s ...\n", lines, path.c_str());
    if (!generate(path, lines))
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
