// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "pipeline_bench.h"

#include "cache/base/clock.h"
#include "cache/events/event_log.h"
#include "cache/events/event_pipeline.h"
#include "cache/events/event_queue.h"
#include "cache/pinning/free_invalidation.h"
#include "cache/registration/registration_cache.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace bench {

using namespace gdrhook;

namespace {

// Forwards to the measured backend and times each unpin call, so that the
// delay splits into the release and everything before it.
class TimedBackend : public PinBackend {
public:
    explicit TimedBackend(std::unique_ptr<PinBackend> inner) : inner_(std::move(inner)) {}
    BackendKind kind() const override { return inner_->kind(); }
    const char *name() const override { return inner_->name(); }
    uint64_t alignment() const override { return inner_->alignment(); }
    Status pin(uint64_t addr, uint64_t length, Pin &out) override
    {
        return inner_->pin(addr, length, out);
    }
    Status unpin(Pin *pins, size_t count) override
    {
        const uint64_t t0 = monotonic_ns();
        Status status = inner_->unpin(pins, count);
        if (count) {
            const uint64_t each = (monotonic_ns() - t0) / count;
            std::lock_guard<std::mutex> lock(mu_);
            per_pin_ns_.insert(per_pin_ns_.end(), count, each);
        }
        return status;
    }
    std::vector<uint64_t> take_per_pin_ns()
    {
        std::lock_guard<std::mutex> lock(mu_);
        return std::move(per_pin_ns_);
    }

private:
    std::unique_ptr<PinBackend> inner_;
    std::mutex mu_;
    std::vector<uint64_t> per_pin_ns_;
};

// The p-th percentile (0 < p < 1) of nanoseconds sorted in ascending
// order, in microseconds; 0 for none.
double percentile_us(const std::vector<uint64_t> &ascending, double p)
{
    if (ascending.empty())
        return 0;
    return ascending[std::min(ascending.size() - 1, static_cast<size_t>(ascending.size() * p))] /
           1e3;
}

} // namespace

QueueResult measure_queue(int producers, uint64_t events_per_producer)
{
    BoundedMpscQueue<Event> queue(4096);
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int p = 0; p < producers; ++p) {
        pool.emplace_back([&, p] {
            Event event;
            event.tid = p;
            ready++;
            while (!go.load(std::memory_order_acquire)) {
            }
            for (uint64_t i = 0; i < events_per_producer; ++i) {
                event.seq = i;
                while (!queue.try_push(event))
                    std::this_thread::yield(); // full: the consumer is behind
            }
        });
    }
    while (ready.load() < producers)
        std::this_thread::yield();
    const uint64_t total = events_per_producer * producers;
    uint64_t popped = 0;
    Event event;
    auto start = monotonic_ns();
    go.store(true, std::memory_order_release);
    while (popped < total) {
        if (queue.try_pop(event))
            ++popped;
    }
    auto elapsed = monotonic_ns() - start;
    for (auto &t : pool)
        t.join();
    return QueueResult{producers, total * 1e3 / static_cast<double>(elapsed)};
}

UnpinDelayResult measure_unpin_delay(std::unique_ptr<PinBackend> backend,
                                     const UnpinBuffers &buffers, uint64_t gap_ns)
{
    UnpinDelayResult result;
    result.backend = backend->name();
    auto timed_backend = std::make_unique<TimedBackend>(std::move(backend));
    TimedBackend &timed = *timed_backend;
    CacheOptions options;
    options.max_entries = 0;
    const uint64_t size = buffers.size;
    options.allocation_of = [&buffers, size](uint64_t addr, AllocationInfo &out) {
        auto it = std::upper_bound(buffers.addrs.begin(), buffers.addrs.end(), addr);
        if (it == buffers.addrs.begin() || addr >= *(it - 1) + size)
            return false;
        out = AllocationInfo{*(it - 1), size, false};
        return true;
    };
    RegistrationCache cache(std::move(timed_backend), std::move(options));

    EventLog log;       // no path: lines are dropped, the flow is the same
    (void)log.open(""); // no file: every line is dropped
    EventPipeline pipeline(4096, log, 0);
    std::mutex latencies_mutex;
    std::vector<uint64_t> latencies;
    // As the shim wires it (cache/core/process_cache.cpp): the worker's
    // batch hook reports the cache's unpins (and does those a free left,
    // a held registration's).
    pipeline.set_batch_hook([&] {
        if (!cache.has_retired())
            return;
        std::vector<uint64_t> mine;
        cache.drain_unpins([&](const UnpinRecord &r) { mine.push_back(r.lat_ns); });
        std::lock_guard<std::mutex> lock(latencies_mutex);
        latencies.insert(latencies.end(), mine.begin(), mine.end());
    });

    for (uint64_t addr : buffers.addrs) {
        Registration reg;
        cache.lookup(addr, size, reg);
    }
    std::vector<uint64_t> free_path;
    const uint64_t started = monotonic_ns();
    for (uint64_t addr : buffers.addrs) {
        uint64_t t0 = monotonic_ns();
        // The hook's flow before the real free
        // (cache/pinning/free_invalidation.cpp).
        if (cache.invalidate(addr, size))
            unpin_freed(cache, pipeline);
        Event event;
        event.kind = EventKind::free;
        event.addr = addr;
        event.size = size;
        event.api = "cuMemFree_v2";
        pipeline.submit(event);
        free_path.push_back(monotonic_ns() - t0);
        // The real free's own cost, during which the worker runs.
        uint64_t until = monotonic_ns() + gap_ns;
        while (gap_ns && monotonic_ns() < until) {
        }
    }
    pipeline.shutdown();
    cache.drain_unpins([&](const UnpinRecord &r) { latencies.push_back(r.lat_ns); });
    const uint64_t ended = monotonic_ns();

    result.frees = buffers.addrs.size();
    result.unpins = latencies.size();
    result.unpins_per_s = ended > started ? latencies.size() * 1e9 / (ended - started) : 0;
    std::sort(latencies.begin(), latencies.end());
    result.p50_us = percentile_us(latencies, 0.50);
    result.p90_us = percentile_us(latencies, 0.90);
    result.p99_us = percentile_us(latencies, 0.99);
    result.max_us = latencies.empty() ? 0 : latencies.back() / 1e3;
    std::sort(free_path.begin(), free_path.end());
    result.free_path_p50_us = percentile_us(free_path, 0.50);
    result.free_path_p99_us = percentile_us(free_path, 0.99);
    std::vector<uint64_t> releases = timed.take_per_pin_ns();
    std::sort(releases.begin(), releases.end());
    result.release_p50_us = percentile_us(releases, 0.50);
    result.release_p99_us = percentile_us(releases, 0.99);
    result.release_max_us = releases.empty() ? 0 : releases.back() / 1e3;
    return result;
}

ReleaseAloneResult measure_release_alone(PinBackend &backend, const UnpinBuffers &buffers)
{
    ReleaseAloneResult result;
    result.backend = backend.name();
    std::vector<Pin> pins(buffers.addrs.size());
    for (size_t i = 0; i < pins.size(); ++i)
        if (!backend.pin(buffers.addrs[i], buffers.size, pins[i]).ok())
            return result;
    std::vector<uint64_t> took;
    took.reserve(pins.size());
    const uint64_t started = monotonic_ns();
    for (Pin &pin : pins) {
        const uint64_t t0 = monotonic_ns();
        backend.unpin(&pin, 1);
        took.push_back(monotonic_ns() - t0);
    }
    const uint64_t ended = monotonic_ns();
    std::sort(took.begin(), took.end());
    result.releases = took.size();
    result.p50_us = percentile_us(took, 0.50);
    result.p99_us = percentile_us(took, 0.99);
    result.releases_per_s = ended > started ? took.size() * 1e9 / (ended - started) : 0;
    return result;
}

} // namespace bench
