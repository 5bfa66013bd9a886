// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "lookup_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

namespace bench {

const char *to_string(Pattern pattern)
{
    return pattern == Pattern::hot ? "hot" : "random";
}

namespace {

constexpr size_t batch = 256;
constexpr size_t addresses_per_thread = 1 << 14;
constexpr uint64_t hit_length = 4096;

using clock_type = std::chrono::steady_clock;

std::vector<uint64_t> addresses_for(const std::vector<Buffer> &buffers, Pattern pattern,
                                    unsigned seed)
{
    std::mt19937_64 rng(seed);
    // Hot: 64 buffers spread over the whole set, as a communication
    // library's send/receive buffers are.
    std::vector<size_t> pool;
    if (pattern == Pattern::hot) {
        size_t count = std::min<size_t>(64, buffers.size());
        for (size_t i = 0; i < count; ++i)
            pool.push_back(i * buffers.size() / count);
    }
    std::vector<uint64_t> out(addresses_per_thread);
    for (uint64_t &addr : out) {
        size_t i = pattern == Pattern::hot ? pool[rng() % pool.size()] : rng() % buffers.size();
        const Buffer &b = buffers[i];
        addr = b.addr + (rng() % (b.size / hit_length)) * hit_length;
    }
    return out;
}

} // namespace

LookupResult measure_lookups(LookupCache &cache, const std::vector<Buffer> &buffers,
                             Pattern pattern, int threads, double seconds)
{
    std::atomic<int> ready{0};
    std::atomic<bool> go{false}, stop{false};
    std::vector<std::vector<float>> batch_ns(threads);
    std::vector<uint64_t> hits(threads), misses(threads);
    std::vector<std::thread> pool;

    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            std::vector<uint64_t> addresses = addresses_for(buffers, pattern, 1000 + t);
            auto &samples = batch_ns[t];
            samples.reserve(1 << 20);
            // Warm this thread's own state (per-thread hit caches) first.
            for (size_t i = 0; i < addresses.size(); ++i)
                cache.hit(addresses[i], hit_length);
            ready++;
            while (!go.load(std::memory_order_acquire)) {
            }
            uint64_t done = 0, failed = 0, sink = 0;
            size_t at = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                auto t0 = clock_type::now();
                for (size_t i = 0; i < batch; ++i) {
                    uint64_t got = cache.hit(addresses[at], hit_length);
                    failed += got == 0;
                    sink += got;
                    at = (at + 1) & (addresses_per_thread - 1);
                }
                auto t1 = clock_type::now();
                done += batch;
                if (samples.size() < samples.capacity())
                    samples.push_back(
                        std::chrono::duration<float, std::nano>(t1 - t0).count() / batch);
            }
            hits[t] = done;
            misses[t] = failed + (sink == 42); // keeps `sink` alive
        });
    }
    while (ready.load() < threads)
        std::this_thread::yield();
    auto start = clock_type::now();
    go.store(true, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop.store(true);
    for (auto &thread : pool)
        thread.join();
    double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();

    LookupResult result;
    result.cache = cache.name();
    result.pattern = pattern;
    result.entries = buffers.size();
    result.threads = threads;
    std::vector<float> all;
    uint64_t total = 0;
    for (int t = 0; t < threads; ++t) {
        all.insert(all.end(), batch_ns[t].begin(), batch_ns[t].end());
        total += hits[t];
        result.misses += misses[t];
    }
    if (!all.empty()) {
        std::sort(all.begin(), all.end());
        result.median_ns = all[all.size() / 2];
        result.p99_ns = all[std::min(all.size() - 1, all.size() * 99 / 100)];
    }
    result.mhits_per_s = total / elapsed / 1e6;
    return result;
}

} // namespace bench
