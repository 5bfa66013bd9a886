// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Lookup-hit latency and throughput of one cache, one entry count, one
// access pattern and one thread count.
//
// Method: every thread replays its own precomputed address list (random
// number generation is not timed) that covers the pattern's buffers several
// times over, after one untimed pass (the misses, and each thread's own hit
// state). Hits run in batches of `batch_hits` through one call into the
// cache (LookupCache::hit_batch: no virtual call a hit), each batch timed
// with one pair of steady_clock reads whose own cost, measured at start, is
// subtracted. Latency is the median (p99) batch's time per hit: a batch
// that was preempted lands in the tail, not in the median. Throughput is
// the sum over threads of each thread's hits over its own timed span, all
// threads running at once (each pinned to its own CPU where there are
// enough).
#pragma once

#include "core_clock.h"
#include "lookup_caches.h"

#include <string>
#include <vector>

namespace bench {

enum class Pattern { hot, random };
const char *to_string(Pattern pattern);

inline constexpr size_t batch_hits = 1024;
inline constexpr size_t hot_buffers = 64;

struct LookupResult {
    std::string cache;
    Pattern pattern = Pattern::hot;
    size_t entries = 0;
    int threads = 1;
    double median_ns = 0;   // per hit, median over batches
    double p99_ns = 0;      // per hit, 99th percentile over batches
    double mhits_per_s = 0; // all threads together
    uint64_t hits = 0;      // timed hits, all threads
    uint64_t misses = 0;    // hits that failed (must be 0)
    // The threads' cores (core_clock.h): each thread's before and after
    // its timed span, averaged; the median over threads. Zeros: not
    // measured on this architecture.
    CoreClock core;
};

// The cost of one steady_clock::now(), median, in ns.
double clock_read_ns();

LookupResult measure_lookups(LookupCache &cache, const std::vector<Buffer> &buffers,
                             Pattern pattern, int threads, double seconds);

} // namespace bench
