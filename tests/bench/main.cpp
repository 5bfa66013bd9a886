// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// gdrhook-bench: the registration cache against its peers, in one run.
//
//   gdrhook-bench [--json] [--seconds S] [--entries 16,256,4096,65536]
//                 [--threads 1,2,4,8,16] [--caches gdrhook.lookup,...]
//                 [--no-queue] [--no-unpin] [--unpin-backend none|eventfd|dmabuf]
//
// Buffers of 64 KiB come from the CUDA driver found with dlopen: on a GPU
// machine device memory; in CI the fake driver's host memory
// (LD_LIBRARY_PATH=<build>/tests/fake_driver). ucs_rcache needs host
// memory with a protection it can check, so it gets an mmap'd arena with
// the same layout. Without any driver every buffer is in that arena and the
// tag check is skipped.
#include "cache/backend_dmabuf.h"
#include "cache/backend_none.h"
#include "cuda_loader.h"
#include "lookup_bench.h"
#include "pipeline_bench.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
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
    double seconds = 0.3;
    std::vector<size_t> entries{16, 256, 4096, 65536};
    std::vector<int> threads{1, 2, 4, 8, 16};
    std::vector<std::string> caches{"gdrhook.lookup", "gdrhook.get_put", "tagcheck",
                                    "ucs_rcache"};
    bool queue = true;
    bool unpin = true;
    std::string unpin_backend = "eventfd";
};

template <typename T>
std::vector<T> parse_list(const char *text)
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
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> const char * { return i + 1 < argc ? argv[++i] : ""; };
        if (a == "--json") o.json = true;
        else if (a == "--seconds") o.seconds = std::atof(value());
        else if (a == "--entries") o.entries = parse_list<size_t>(value());
        else if (a == "--threads") o.threads = parse_list<int>(value());
        else if (a == "--caches") o.caches = parse_list<std::string>(value());
        else if (a == "--no-queue") o.queue = false;
        else if (a == "--no-unpin") o.unpin = false;
        else if (a == "--unpin-backend") o.unpin_backend = value();
        else {
            std::fprintf(stderr, "gdrhook-bench: unknown argument %s\n", a.c_str());
            return false;
        }
    }
    return true;
}

// Pins are eventfds: the unpin is a real close(), like a dma-buf's, minus
// the driver's release work.
class EventfdBackend final : public gdrhook::PinBackend
{
public:
    gdrhook::BackendKind kind() const override { return gdrhook::BackendKind::dmabuf; }
    const char *name() const override { return "eventfd"; }
    uint64_t alignment() const override { return 4096; }
    gdrhook::Status pin(uint64_t, uint64_t, gdrhook::Pin &out) override
    {
        out.fd.reset(eventfd(0, EFD_CLOEXEC));
        return out.fd.valid() ? gdrhook::Status::success()
                              : gdrhook::Status::error(gdrhook::StatusCode::io_error, errno,
                                                       "eventfd failed");
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

} // namespace

int main(int argc, char **argv)
{
    Options o;
    if (!parse(argc, argv, o))
        return 2;
    Cuda cuda = Cuda::open();
    const char *memory = cuda.context ? "driver" : "host";
    std::string ucx_why;
    unsigned cpus = std::thread::hardware_concurrency();

    std::vector<LookupResult> lookups;
    for (size_t entries : o.entries) {
        std::vector<Buffer> driver = cuda.context ? driver_buffers(cuda, entries)
                                                  : std::vector<Buffer>{};
        std::vector<Buffer> host = arena_buffers(entries);
        const std::vector<Buffer> &main_buffers = cuda.context ? driver : host;
        if (main_buffers.size() != entries) {
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
            else if (name == "ucs_rcache") {
                cache = make_ucx_cache(ucx_why);
                buffers = &host;
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
            for (Pattern pattern : {Pattern::hot, Pattern::random}) {
                for (int threads : o.threads) {
                    lookups.push_back(measure_lookups(*cache, *buffers, pattern, threads,
                                                      o.seconds));
                    const LookupResult &r = lookups.back();
                    if (!o.json)
                        std::printf("%-16s %-6s %6zu entries %2d threads: median %8.2f ns  "
                                    "p99 %8.2f ns  %9.2f Mhits/s%s\n",
                                    r.cache.c_str(), to_string(r.pattern), r.entries,
                                    r.threads, r.median_ns, r.p99_ns, r.mhits_per_s,
                                    r.misses ? "  (MISSES)" : "");
                    std::fflush(stdout);
                }
            }
        }
        if (cuda.context)
            free_driver_buffers(cuda, driver);
        munmap(reinterpret_cast<void *>(host.front().addr), entries * buffer_stride);
    }

    std::vector<QueueResult> queue;
    if (o.queue)
        for (int p : {1, 2, 4, 8, 16}) {
            queue.push_back(measure_queue(p, 2000000 / p));
            if (!o.json)
                std::printf("queue: %2d producers, 1 consumer: %7.2f Mevents/s\n", p,
                            queue.back().mevents_per_s);
        }

    std::vector<UnpinDelayResult> unpins;
    if (o.unpin) {
        for (uint64_t gap_ns : {uint64_t(0), uint64_t(40000)}) {
            std::unique_ptr<gdrhook::PinBackend> backend;
            std::vector<Buffer> bufs;
            UnpinBuffers ub;
            ub.size = buffer_size;
            bool real = o.unpin_backend == "dmabuf";
            if (real && cuda.context && cuda.api.mem_get_handle_for_address_range) {
                bufs = driver_buffers(cuda, 2048);
                backend = std::make_unique<gdrhook::DmabufBackend>(cuda.api);
            } else {
                bufs = arena_buffers(4096);
                if (o.unpin_backend == "none")
                    backend = std::make_unique<gdrhook::NoneBackend>();
                else
                    backend = std::make_unique<EventfdBackend>();
            }
            for (const Buffer &b : bufs)
                ub.addrs.push_back(b.addr);
            std::sort(ub.addrs.begin(), ub.addrs.end());
            unpins.push_back(measure_unpin_delay(std::move(backend), ub, gap_ns));
            const UnpinDelayResult &u = unpins.back();
            if (!o.json)
                std::printf("free-to-unpin (%s, %llu frees %s): p50 %.1f us  p90 %.1f us  "
                            "p99 %.1f us  max %.1f us; invalidate+submit %.0f ns\n",
                            u.backend, static_cast<unsigned long long>(u.frees),
                            gap_ns ? "40 us apart" : "back to back", u.p50_us, u.p90_us,
                            u.p99_us, u.max_us, u.free_path_ns);
            if (real && cuda.context)
                free_driver_buffers(cuda, bufs);
            else if (!bufs.empty())
                munmap(reinterpret_cast<void *>(bufs.front().addr), 4096 * buffer_stride);
        }
    }

    if (o.json) {
        std::printf("{\n  \"memory\": \"%s\",\n  \"device\": \"%s\",\n  \"cpus\": %u,\n"
                    "  \"ucx\": %s,\n  \"lookups\": [\n",
                    memory, cuda.context ? cuda.device_name.c_str() : "", cpus,
                    ucx_why.empty() ? "true" : "false");
        for (size_t i = 0; i < lookups.size(); ++i) {
            const LookupResult &r = lookups[i];
            std::printf("    {\"cache\": \"%s\", \"pattern\": \"%s\", \"entries\": %zu, "
                        "\"threads\": %d, \"median_ns\": %.3f, \"p99_ns\": %.3f, "
                        "\"mhits_per_s\": %.3f, \"misses\": %llu}%s\n",
                        r.cache.c_str(), to_string(r.pattern), r.entries, r.threads,
                        r.median_ns, r.p99_ns, r.mhits_per_s,
                        static_cast<unsigned long long>(r.misses),
                        i + 1 < lookups.size() ? "," : "");
        }
        std::printf("  ],\n  \"queue\": [\n");
        for (size_t i = 0; i < queue.size(); ++i)
            std::printf("    {\"producers\": %d, \"mevents_per_s\": %.3f}%s\n",
                        queue[i].producers, queue[i].mevents_per_s,
                        i + 1 < queue.size() ? "," : "");
        std::printf("  ],\n  \"unpin_delay\": [\n");
        for (size_t i = 0; i < unpins.size(); ++i) {
            const UnpinDelayResult &u = unpins[i];
            std::printf("    {\"backend\": \"%s\", \"gap_ns\": %d, \"frees\": %llu, "
                        "\"unpins\": %llu, \"p50_us\": %.3f, \"p90_us\": %.3f, "
                        "\"p99_us\": %.3f, \"max_us\": %.3f, \"free_path_ns\": %.1f}%s\n",
                        u.backend, i == 0 ? 0 : 40000, static_cast<unsigned long long>(u.frees),
                        static_cast<unsigned long long>(u.unpins), u.p50_us, u.p90_us,
                        u.p99_us, u.max_us, u.free_path_ns, i + 1 < unpins.size() ? "," : "");
        }
        std::printf("  ]\n}\n");
    } else if (!ucx_why.empty()) {
        std::printf("ucs_rcache: %s\n", ucx_why.c_str());
    }
    if (!cuda.context && !o.json)
        std::printf("no CUDA context (%s): tag check skipped, host memory\n", cuda.why.c_str());
    return 0;
}
