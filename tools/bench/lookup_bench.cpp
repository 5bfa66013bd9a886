// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "lookup_bench.h"

#include "core_clock.h"
#include "median.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <pthread.h>
#include <random>
#include <sched.h>
#include <thread>

namespace bench {

const char *to_string(Pattern pattern)
{
    return pattern == Pattern::hot ? "hot" : "random";
}

namespace {

constexpr uint64_t hit_length = 4096;
constexpr uint64_t min_batches = 16;

using clock_type = std::chrono::steady_clock;

// Enough addresses that a random list visits every buffer about four times
// per pass; a power of two.
size_t list_length(size_t buffers)
{
    size_t n = size_t(1) << 14;
    while (n < 4 * buffers)
        n <<= 1;
    return n;
}

std::vector<uint64_t> addresses_for(const std::vector<Buffer> &buffers, Pattern pattern,
                                    unsigned seed)
{
    std::mt19937_64 rng(seed);
    // Hot: 64 buffers spread over the whole set, as a communication
    // library's send/receive buffers are.
    std::vector<size_t> pool;
    if (pattern == Pattern::hot) {
        size_t count = std::min(hot_buffers, buffers.size());
        for (size_t i = 0; i < count; ++i)
            pool.push_back(i * buffers.size() / count);
    }
    std::vector<uint64_t> out(list_length(pattern == Pattern::hot ? pool.size() : buffers.size()));
    for (uint64_t &addr : out) {
        size_t i = pattern == Pattern::hot ? pool[rng() % pool.size()] : rng() % buffers.size();
        const Buffer &b = buffers[i];
        addr = b.addr + (rng() % (b.size / hit_length)) * hit_length;
    }
    return out;
}

// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus()
{
    std::vector<int> out;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
            if (CPU_ISSET(cpu, &set))
                out.push_back(cpu);
    return out;
}

void pin_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

} // namespace

double clock_read_ns()
{
    static const double cost = [] {
        std::vector<double> samples;
        for (int i = 0; i < 2001; ++i) {
            auto t0 = clock_type::now();
            auto t1 = clock_type::now();
            samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
        }
        std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
        return samples[samples.size() / 2];
    }();
    return cost;
}

LookupResult measure_lookups(LookupCache &cache, const std::vector<Buffer> &buffers,
                             Pattern pattern, int threads, double seconds)
{
    const double clock_ns = clock_read_ns();
    const std::vector<int> cpus = allowed_cpus();
    // Pin only when every thread gets a CPU of its own: otherwise let the
    // scheduler spread them.
    const bool pin = cpus.size() >= static_cast<size_t>(threads);

    std::atomic<int> ready{0};
    std::atomic<bool> go{false}, stop{false};
    std::vector<std::vector<float>> batch_ns(threads);
    std::vector<uint64_t> hits(threads), misses(threads);
    std::vector<double> spans(threads), ghz(threads), width(threads);
    std::vector<std::thread> pool;

    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            if (pin)
                pin_to(cpus[t]);
            const std::vector<uint64_t> addresses = addresses_for(buffers, pattern, 1000 + t);
            const size_t mask = addresses.size() - 1; // batch_hits divides it
            // This thread's own vector, handed over at the end: pushing into
            // batch_ns[t] wrote its end pointer, which shares a cache line
            // with other threads' vectors, once a batch.
            std::vector<float> samples;
            samples.reserve(size_t(1) << 20);
            uint64_t sink = 0, failed = 0;
            // One untimed pass: this thread's own state (hit slots) warm.
            for (size_t at = 0; at < addresses.size(); at += batch_hits)
                cache.hit_batch(&addresses[at], batch_hits, hit_length, sink);
            const CoreClock core_before = core_clock();
            ready++;
            while (!go.load(std::memory_order_acquire)) {
            }
            uint64_t done = 0;
            size_t at = 0;
            auto begin = clock_type::now();
            // At least min_batches each, however late this thread got a CPU.
            while (done < min_batches * batch_hits || !stop.load(std::memory_order_relaxed)) {
                auto t0 = clock_type::now();
                failed += cache.hit_batch(&addresses[at], batch_hits, hit_length, sink);
                auto t1 = clock_type::now();
                at = (at + batch_hits) & mask;
                done += batch_hits;
                if (samples.size() < samples.capacity()) {
                    double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
                    samples.push_back(
                        static_cast<float>(std::max(0.0, ns - clock_ns) / batch_hits));
                }
            }
            spans[t] = std::chrono::duration<double>(clock_type::now() - begin).count();
            const CoreClock core_after = core_clock();
            ghz[t] = (core_before.ghz + core_after.ghz) / 2;
            width[t] = (core_before.adds_per_cycle + core_after.adds_per_cycle) / 2;
            batch_ns[t] = std::move(samples);
            hits[t] = done;
            misses[t] = failed;
            asm volatile("" : : "r"(sink)); // keeps the work
        });
    }
    while (ready.load() < threads)
        std::this_thread::yield();
    go.store(true, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop.store(true);
    for (auto &thread : pool)
        thread.join();

    LookupResult result;
    result.cache = cache.name();
    result.pattern = pattern;
    result.entries = buffers.size();
    result.threads = threads;
    std::vector<float> all;
    for (int t = 0; t < threads; ++t) {
        all.insert(all.end(), batch_ns[t].begin(), batch_ns[t].end());
        result.hits += hits[t];
        result.misses += misses[t];
        if (spans[t] > 0)
            result.mhits_per_s += hits[t] / spans[t] / 1e6;
    }
    result.core.ghz = median(ghz);
    result.core.adds_per_cycle = median(width);
    if (!all.empty()) {
        std::sort(all.begin(), all.end());
        result.median_ns = all[all.size() / 2];
        result.p99_ns = all[std::min(all.size() - 1, all.size() * 99 / 100)];
    }
    return result;
}

} // namespace bench
