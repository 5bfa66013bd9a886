// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// gdrhook-bench: the registration cache against its peers, in one run.
//
//   gdrhook-bench [--json | --json-out PATH] [--seconds S]
//                 [--entries 16,256,4096,65536] [--threads 1,2,4,8,16]
//                 [--patterns hot,random]
//                 [--caches gdrhook.lookup,gdrhook.get_put,tagcheck,ucs_rcache,query]
//                 [--queue-producers 1,2,4,8,16] [--queue-events N] [--no-queue]
//                 [--unpin-backends eventfd,dmabuf,none] [--unpin-frees N] [--no-unpin]
//                 [--rounds 5]
//
// --json prints only the JSON on stdout; --json-out prints the table and
// writes the JSON to PATH. Both end with "targets": the lookup and unpin goals of docs/performance.md as
// ratios taken from this run (at the largest entry count, single thread
// unless stated), each with the value found and whether it was met. The
// lookup goals come from --rounds rounds that measure their points back to
// back, each goal the median of its rounds (targets.h); --rounds 0 takes
// them from the sweep instead.
//
// Buffers of 64 KiB come from the CUDA driver found with dlopen: on a GPU
// machine device memory; in CI the fake driver's host memory
// (LD_LIBRARY_PATH=<build>/tests/fake_driver). ucs_rcache needs host
// memory with a protection it can check, so it gets an mmap'd arena with
// the same layout. Without any driver every buffer is in that arena and the
// tag check is skipped.
#include "cache/backends/dmabuf_backend.h"
#include "cache/backends/none_backend.h"
#include "cuda_loader.h"
#include "lookup_bench.h"
#include "pipeline_bench.h"
#include "targets.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

using namespace bench;

namespace {

constexpr uint64_t buffer_size = 64 * 1024;
constexpr uint64_t buffer_stride = 128 * 1024; // gaps: no two buffers touch

struct Options {
    bool json = false;
    std::string json_out;
    double seconds = 0.3;
    std::vector<size_t> entries{16, 256, 4096, 65536};
    std::vector<int> threads{1, 2, 4, 8, 16};
    std::vector<std::string> patterns{"hot", "random"};
    std::vector<std::string> caches{"gdrhook.lookup", "gdrhook.get_put", "tagcheck", "ucs_rcache"};
    bool queue = true;
    std::vector<int> queue_producers{1, 2, 4, 8, 16};
    uint64_t queue_events = 2000000;
    int rounds = 5; // of the goals' points (targets.h); 0: the goals from the sweep
    bool unpin = true;
    std::vector<std::string> unpin_backends{"eventfd"};
    size_t unpin_frees = 4096;
};

template <typename T> std::vector<T> parse_list(const char *text)
{
    std::vector<T> out;
    for (const char *p = text; *p;) {
        const char *comma = std::strchr(p, ',');
        std::string item(p, comma ? comma - p : std::strlen(p));
        if constexpr (std::is_same_v<T, std::string>)
            out.push_back(item);
        else
            out.push_back(static_cast<T>(std::stoull(item)));
        p = comma ? comma + 1 : p + item.size();
    }
    return out;
}

bool parse(int argc, char **argv, Options &o)
{
    try {
        for (int i = 1; i < argc; ++i) {
            std::string a = argv[i];
            auto value = [&]() -> const char * {
                if (i + 1 >= argc)
                    throw std::invalid_argument(a + " needs a value");
                return argv[++i];
            };
            if (a == "--json")
                o.json = true;
            else if (a == "--json-out")
                o.json_out = value();
            else if (a == "--seconds")
                o.seconds = std::atof(value());
            else if (a == "--entries")
                o.entries = parse_list<size_t>(value());
            else if (a == "--threads")
                o.threads = parse_list<int>(value());
            else if (a == "--patterns")
                o.patterns = parse_list<std::string>(value());
            else if (a == "--caches")
                o.caches = parse_list<std::string>(value());
            else if (a == "--rounds")
                o.rounds = std::stoi(value());
            else if (a == "--no-queue")
                o.queue = false;
            else if (a == "--queue-producers")
                o.queue_producers = parse_list<int>(value());
            else if (a == "--queue-events")
                o.queue_events = std::stoull(value());
            else if (a == "--no-unpin")
                o.unpin = false;
            else if (a == "--unpin-backends" || a == "--unpin-backend")
                o.unpin_backends = parse_list<std::string>(value());
            else if (a == "--unpin-frees")
                o.unpin_frees = std::stoull(value());
            else if (a == "--help" || a == "-h") {
                std::printf("usage: see the header of tools/bench/main.cpp\n");
                std::exit(0);
            } else
                throw std::invalid_argument("unknown argument " + a);
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "gdrhook-bench: %s\n", e.what());
        return false;
    }
    for (const std::string &p : o.patterns)
        if (p != "hot" && p != "random") {
            std::fprintf(stderr, "gdrhook-bench: --patterns: hot or random, not %s\n", p.c_str());
            return false;
        }
    for (int t : o.threads)
        if (t < 1 || t > 1024) {
            std::fprintf(stderr, "gdrhook-bench: --threads: 1 to 1024\n");
            return false;
        }
    if (o.rounds < 0 || o.rounds > 1000) {
        std::fprintf(stderr, "gdrhook-bench: --rounds: 0 to 1000\n");
        return false;
    }
    for (size_t e : o.entries)
        if (e < 1) {
            std::fprintf(stderr, "gdrhook-bench: --entries: at least 1\n");
            return false;
        }
    return true;
}

// Pins are eventfds: the unpin is a real close(), like a dma-buf's, minus
// the driver's release work.
class EventfdBackend final : public gdrhook::PinBackend {
public:
    gdrhook::BackendKind kind() const override { return gdrhook::BackendKind::dmabuf; }
    const char *name() const override { return "eventfd"; }
    uint64_t alignment() const override { return 4096; }
    gdrhook::Status pin(uint64_t, uint64_t, gdrhook::Pin &out) override
    {
        out.fd = gdrhook::OwnedFd::adopt(gdrhook::UniqueFd(eventfd(0, EFD_CLOEXEC)), false);
        return out.fd.valid()
                   ? gdrhook::Status::success()
                   : gdrhook::Status::error(gdrhook::StatusCode::io_error, errno, "eventfd failed");
    }
    gdrhook::Status unpin(gdrhook::Pin *pins, size_t count) override
    {
        for (size_t i = 0; i < count; ++i)
            pins[i].fd.reset();
        return gdrhook::Status::success();
    }
};

std::vector<Buffer> arena_buffers(size_t count)
{
    size_t bytes = count * buffer_stride;
    void *arena = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (arena == MAP_FAILED)
        return {};
    std::vector<Buffer> out(count);
    for (size_t i = 0; i < count; ++i)
        out[i] = Buffer{reinterpret_cast<uint64_t>(arena) + i * buffer_stride, buffer_size, 0};
    return out;
}

std::vector<Buffer> driver_buffers(const Cuda &cuda, size_t count)
{
    std::vector<Buffer> out;
    for (size_t i = 0; i < count; ++i) {
        unsigned long long p = 0;
        if (cuda.mem_alloc(&p, buffer_size) != 0)
            break;
        unsigned long long id = 0;
        if (cuda.pointer_get_attribute)
            cuda.pointer_get_attribute(&id, gdrhook::cuda::pointer_attribute_buffer_id, p);
        out.push_back(Buffer{p, buffer_size, id});
    }
    return out;
}

void free_driver_buffers(const Cuda &cuda, const std::vector<Buffer> &buffers)
{
    for (const Buffer &b : buffers)
        cuda.mem_free(b.addr);
}

// The table on stdout, unless --json asked for JSON there.
bool table_output = true;
__attribute__((format(printf, 1, 2))) void say(const char *format, ...)
{
    if (!table_output)
        return;
    va_list args;
    va_start(args, format);
    std::vprintf(format, args);
    va_end(args);
    std::fflush(stdout);
}

// The JSON document, built as text (no JSON library in this binary).
class Json {
public:
    void add(const char *format, ...) __attribute__((format(printf, 2, 3)))
    {
        char line[1024];
        va_list args;
        va_start(args, format);
        std::vsnprintf(line, sizeof(line), format, args);
        va_end(args);
        text_ += line;
    }
    static std::string quote(const std::string &s)
    {
        std::string out = "\"";
        for (char c : s) {
            if (c == '"' || c == '\\')
                out += '\\';
            if (static_cast<unsigned char>(c) >= 0x20)
                out += c;
        }
        return out + "\"";
    }
    static std::string number(std::optional<double> v)
    {
        if (!v || !std::isfinite(*v))
            return "null";
        char text[64];
        std::snprintf(text, sizeof(text), "%.3f", *v);
        return text;
    }
    const std::string &text() const { return text_; }

private:
    std::string text_;
};

} // namespace

int main(int argc, char **argv)
{
    Options o;
    if (!parse(argc, argv, o))
        return 2;
    table_output = !o.json;
    gdrhook::Result<Cuda> opened = Cuda::open();
    Cuda cuda = std::move(*opened);
    const char *memory = cuda.context ? "driver" : "host";
    std::string ucx_why;
    bool ucx_used = false;
    unsigned cpus = std::thread::hardware_concurrency();
    if (cuda.context)
        say("driver: %s (buffers of %llu KiB in device memory; ucs_rcache on host memory)\n",
            cuda.device_name.c_str(), static_cast<unsigned long long>(buffer_size >> 10));
    else
        say("no CUDA context (%s): tag check skipped, host memory\n", opened.why().c_str());
    say("%u CPUs; hits of 4 KiB timed in batches of %zu, clock read %.1f ns subtracted\n", cpus,
        batch_hits, clock_read_ns());

    std::vector<Pattern> patterns;
    for (const std::string &p : o.patterns)
        patterns.push_back(p == "hot" ? Pattern::hot : Pattern::random);

    const size_t largest =
        o.entries.empty() ? 0 : *std::max_element(o.entries.begin(), o.entries.end());
    const int most_threads =
        o.threads.empty() ? 1 : *std::max_element(o.threads.begin(), o.threads.end());
    std::vector<LookupResult> lookups;
    std::vector<Target> targets;
    if (!o.entries.empty() && !o.caches.empty())
        say("\n%-16s %-6s %7s %7s %10s %10s %12s %8s %8s %8s\n", "cache", "access", "entries",
            "threads", "median ns", "p99 ns", "Mhits/s", "core GHz", "adds/cyc", "cycles");
    for (size_t entries : o.entries) {
        std::vector<Buffer> driver =
            cuda.context ? driver_buffers(cuda, entries) : std::vector<Buffer>{};
        std::vector<Buffer> host = arena_buffers(entries);
        const std::vector<Buffer> &main_buffers = cuda.context ? driver : host;
        // At the largest entry count the caches stay warm for the goals' rounds.
        std::vector<KeptCache> kept;
        if (main_buffers.size() != entries || host.size() != entries) {
            std::fprintf(stderr, "gdrhook-bench: could not get %zu buffers\n", entries);
            return 1;
        }
        for (const std::string &name : o.caches) {
            // One cache per kind and size, warmed once (the misses are not
            // what is measured), then every pattern and thread count.
            std::unique_ptr<LookupCache> cache;
            const std::vector<Buffer> *buffers = &main_buffers;
            if (name == "gdrhook.lookup" || name == "gdrhook.get_put")
                cache = make_gdrhook_cache(main_buffers, name == "gdrhook.get_put");
            else if (name == "tagcheck" && cuda.context)
                cache = make_tagcheck_cache(cuda);
            else if (name == "query" && cuda.context)
                cache = make_pointer_query(cuda);
            else if (name == "ucs_rcache") {
                auto made = make_ucx_cache();
                if (!made)
                    ucx_why = made.why();
                cache = std::move(*made);
                ucx_used |= cache != nullptr;
                buffers = &host;
            } else if (name != "tagcheck" && name != "query") {
                std::fprintf(stderr, "gdrhook-bench: unknown cache %s\n", name.c_str());
                return 2;
            }
            if (!cache)
                continue;
            bool warmed = true;
            for (const Buffer &b : *buffers)
                warmed &= cache->warm(b);
            if (!warmed) {
                std::fprintf(stderr, "gdrhook-bench: %s could not cache the buffers\n",
                             cache->name());
                continue;
            }
            for (Pattern pattern : patterns) {
                for (int threads : o.threads) {
                    lookups.push_back(
                        measure_lookups(*cache, *buffers, pattern, threads, o.seconds));
                    const LookupResult &r = lookups.back();
                    // cycles: the median hit in the clock its cores ran at.
                    say("%-16s %-6s %7zu %7d %10.2f %10.2f %12.2f %8.2f %8.2f %8.1f%s\n",
                        r.cache.c_str(), to_string(r.pattern), r.entries, r.threads, r.median_ns,
                        r.p99_ns, r.mhits_per_s, r.core.ghz, r.core.adds_per_cycle,
                        r.median_ns * r.core.ghz, r.misses ? "  (MISSES)" : "");
                }
            }
            if (entries == largest && o.rounds > 0) {
                kept.push_back(KeptCache{std::move(cache), buffers});
            }
        }
        if (entries == largest && o.rounds > 0) {
            say("\nthe goals' points, %d rounds at %zu entries...\n", o.rounds, entries);
            targets = lookup_targets_in_rounds(kept, patterns, entries, most_threads, o.rounds,
                                               o.seconds);
        }
        kept.clear(); // the caches go before the buffers they hold
        if (cuda.context)
            free_driver_buffers(cuda, driver);
        munmap(reinterpret_cast<void *>(host.front().addr), entries * buffer_stride);
    }
    if (!ucx_why.empty())
        say("ucs_rcache: %s\n", ucx_why.c_str());

    std::vector<QueueResult> queue;
    if (o.queue) {
        say("\n");
        for (int p : o.queue_producers) {
            if (p < 1)
                continue;
            queue.push_back(measure_queue(p, std::max<uint64_t>(1, o.queue_events / p)));
            say("queue: %2d producers, 1 consumer: %8.2f Mevents/s\n", p,
                queue.back().mevents_per_s);
        }
    }

    struct UnpinRun {
        UnpinDelayResult result;
        uint64_t gap_ns;
    };
    std::vector<UnpinRun> unpins;
    std::vector<ReleaseAloneResult> releases;
    if (o.unpin) {
        say("\n");
        for (const std::string &kind : o.unpin_backends) {
            for (uint64_t gap_ns : {uint64_t(0), uint64_t(40000)}) {
                std::unique_ptr<gdrhook::PinBackend> backend;
                std::vector<Buffer> bufs;
                bool driver_memory = false;
                if (kind == "dmabuf") {
                    if (!cuda.context || !cuda.api.mem_get_handle_for_address_range) {
                        say("free-to-unpin (dmabuf): skipped, no driver with dma-buf export\n");
                        break;
                    }
                    bufs = driver_buffers(cuda, o.unpin_frees);
                    driver_memory = true;
                    backend = std::make_unique<gdrhook::DmabufBackend>(cuda.api);
                } else if (kind == "none" || kind == "eventfd") {
                    bufs = arena_buffers(o.unpin_frees);
                    if (kind == "none")
                        backend = std::make_unique<gdrhook::NoneBackend>();
                    else
                        backend = std::make_unique<EventfdBackend>();
                } else {
                    std::fprintf(stderr, "gdrhook-bench: unknown unpin backend %s\n", kind.c_str());
                    return 2;
                }
                UnpinBuffers ub;
                ub.size = buffer_size;
                for (const Buffer &b : bufs)
                    ub.addrs.push_back(b.addr);
                std::sort(ub.addrs.begin(), ub.addrs.end());
                if (gap_ns == 0) {
                    // The floor: the backend releasing the same buffers alone.
                    ReleaseAloneResult r = measure_release_alone(*backend, ub);
                    releases.push_back(r);
                    say("%s release alone (%llu pins, one at a time): p50 %.1f us  p99 %.1f us;"
                        " %.0f releases/s\n",
                        r.backend, static_cast<unsigned long long>(r.releases), r.p50_us, r.p99_us,
                        r.releases_per_s);
                }
                unpins.push_back({measure_unpin_delay(std::move(backend), ub, gap_ns), gap_ns});
                const UnpinDelayResult &u = unpins.back().result;
                say("free-to-unpin (%s, %llu frees %s): p50 %.1f us  p90 %.1f us  p99 %.1f us"
                    "  max %.1f us; %.0f unpins/s\n",
                    u.backend, static_cast<unsigned long long>(u.frees),
                    gap_ns ? "40 us apart" : "back to back", u.p50_us, u.p90_us, u.p99_us, u.max_us,
                    u.unpins_per_s);
                say("  the freeing thread's part (invalidate, unpin, submit) p50 %.1f us  p99 %.1f "
                    "us;"
                    " of it the release (per pin) p50 %.1f us  p99 %.1f us  max %.1f us\n",
                    u.free_path_p50_us, u.free_path_p99_us, u.release_p50_us, u.release_p99_us,
                    u.release_max_us);
                if (driver_memory)
                    free_driver_buffers(cuda, bufs);
                else if (!bufs.empty())
                    munmap(reinterpret_cast<void *>(bufs.front().addr),
                           bufs.size() * buffer_stride);
            }
        }
    }

    if (o.rounds == 0)
        targets = lookup_targets(lookups, largest, most_threads);
    // Eager unpin at the real driver's pace (a free every 40 us), dma-buf.
    for (const UnpinRun &run : unpins) {
        if (run.gap_ns == 0 || std::string(run.result.backend) != "dmabuf")
            continue;
        targets.push_back(make_target("unpin_p50_us",
                                      "free-to-unpin p50, dma-buf, frees 40 us apart",
                                      run.result.p50_us, "<=", 50));
        targets.push_back(make_target("unpin_p99_us",
                                      "free-to-unpin p99, dma-buf, frees 40 us apart",
                                      run.result.p99_us, "<=", 25));
    }
    if (o.rounds > 0)
        say("\ntargets (docs/performance.md), from this run; a lookup goal is the median of "
            "%d rounds (their range in brackets):\n",
            o.rounds);
    else
        say("\ntargets (docs/performance.md), from this run:\n");
    for (const Target &t : targets) {
        auto met = t.met();
        std::string range;
        if (!t.rounds.empty()) {
            auto [low, high] = std::minmax_element(t.rounds.begin(), t.rounds.end());
            range = "[" + Json::number(*low) + " .. " + Json::number(*high) + "]  ";
        }
        say("  %-22s %10s  (goal %s %g)  %-4s  %s%s\n", t.name.c_str(),
            Json::number(t.value).c_str(), t.relation, t.goal,
            !met   ? "n/a"
            : *met ? "met"
                   : "NOT",
            range.c_str(), t.what.c_str());
    }

    if (!o.json && o.json_out.empty())
        return 0;
    Json j;
    j.add("{\n  \"memory\": \"%s\",\n  \"device\": %s,\n  \"cpus\": %u,\n", memory,
          Json::quote(cuda.context ? cuda.device_name : "").c_str(), cpus);
    j.add("  \"ucx\": %s,\n  \"clock_read_ns\": %.2f,\n  \"batch_hits\": %zu,\n"
          "  \"hit_bytes\": 4096,\n  \"buffer_bytes\": %llu,\n  \"seconds\": %.3f,\n",
          ucx_used ? "true" : "false", clock_read_ns(), batch_hits,
          static_cast<unsigned long long>(buffer_size), o.seconds);
    j.add("  \"lookups\": [\n");
    for (size_t i = 0; i < lookups.size(); ++i) {
        const LookupResult &r = lookups[i];
        j.add("    {\"cache\": \"%s\", \"pattern\": \"%s\", \"entries\": %zu, "
              "\"threads\": %d, \"median_ns\": %.3f, \"p99_ns\": %.3f, "
              "\"mhits_per_s\": %.3f, \"hits\": %llu, \"misses\": %llu, \"core_ghz\": %.3f, "
              "\"core_adds_per_cycle\": %.3f}%s\n",
              r.cache.c_str(), to_string(r.pattern), r.entries, r.threads, r.median_ns, r.p99_ns,
              r.mhits_per_s, static_cast<unsigned long long>(r.hits),
              static_cast<unsigned long long>(r.misses), r.core.ghz, r.core.adds_per_cycle,
              i + 1 < lookups.size() ? "," : "");
    }
    j.add("  ],\n  \"queue\": [\n");
    for (size_t i = 0; i < queue.size(); ++i)
        j.add("    {\"producers\": %d, \"mevents_per_s\": %.3f}%s\n", queue[i].producers,
              queue[i].mevents_per_s, i + 1 < queue.size() ? "," : "");
    j.add("  ],\n  \"unpin_delay\": [\n");
    for (size_t i = 0; i < unpins.size(); ++i) {
        const UnpinDelayResult &u = unpins[i].result;
        j.add("    {\"backend\": \"%s\", \"gap_ns\": %llu, \"frees\": %llu, "
              "\"unpins\": %llu, \"p50_us\": %.3f, \"p90_us\": %.3f, \"p99_us\": %.3f, "
              "\"max_us\": %.3f, \"unpins_per_s\": %.0f, \"free_path_p50_us\": %.3f, "
              "\"free_path_p99_us\": %.3f, \"release_p50_us\": %.3f, \"release_p99_us\": %.3f, "
              "\"release_max_us\": %.3f}%s\n",
              u.backend, static_cast<unsigned long long>(unpins[i].gap_ns),
              static_cast<unsigned long long>(u.frees), static_cast<unsigned long long>(u.unpins),
              u.p50_us, u.p90_us, u.p99_us, u.max_us, u.unpins_per_s, u.free_path_p50_us,
              u.free_path_p99_us, u.release_p50_us, u.release_p99_us, u.release_max_us,
              i + 1 < unpins.size() ? "," : "");
    }
    j.add("  ],\n  \"release_alone\": [\n");
    for (size_t i = 0; i < releases.size(); ++i)
        j.add("    {\"backend\": \"%s\", \"releases\": %llu, \"p50_us\": %.3f, "
              "\"p99_us\": %.3f, \"releases_per_s\": %.0f}%s\n",
              releases[i].backend, static_cast<unsigned long long>(releases[i].releases),
              releases[i].p50_us, releases[i].p99_us, releases[i].releases_per_s,
              i + 1 < releases.size() ? "," : "");
    j.add("  ],\n  \"targets\": {\n    \"entries\": %zu,\n    \"threads\": %d,\n"
          "    \"rounds\": %d",
          largest, most_threads, o.rounds);
    for (const Target &t : targets) {
        auto met = t.met();
        std::string rounds, cores;
        for (double v : t.rounds)
            rounds += (rounds.empty() ? "" : ", ") + Json::number(v);
        // Each round's core of gdrhook.lookup's point (core_clock.h):
        // [GHz, adds a cycle], beside the round's value.
        for (const CoreClock &c : t.round_cores)
            cores += (cores.empty() ? "[" : ", [") + Json::number(c.ghz) + ", " +
                     Json::number(c.adds_per_cycle) + "]";
        j.add(",\n    %s: {\"value\": %s, \"goal\": \"%s %g\", \"met\": %s, \"what\": %s, "
              "\"rounds\": [%s], \"round_cores\": [%s]}",
              Json::quote(t.name).c_str(), Json::number(t.value).c_str(), t.relation, t.goal,
              !met   ? "null"
              : *met ? "true"
                     : "false",
              Json::quote(t.what).c_str(), rounds.c_str(), cores.c_str());
    }
    j.add("\n  }\n}\n");

    if (o.json) {
        std::fputs(j.text().c_str(), stdout);
    } else {
        FILE *out = std::fopen(o.json_out.c_str(), "w");
        if (!out || std::fputs(j.text().c_str(), out) < 0 || std::fclose(out) != 0) {
            std::fprintf(stderr, "gdrhook-bench: cannot write %s: %s\n", o.json_out.c_str(),
                         std::strerror(errno));
            return 1;
        }
        say("\nJSON written to %s\n", o.json_out.c_str());
    }
    return 0;
}
