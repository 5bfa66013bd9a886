// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Lookup-hit latency and throughput of one cache, one entry count, one
// access pattern and one thread count. Every thread replays its own
// precomputed address list (so random-number generation is not timed) in
// batches of 256 hits timed as one; latency is the median batch's
// per-hit time, throughput the hits of all threads over the wall time.
#pragma once

#include "lookup_caches.h"

#include <string>
#include <vector>

namespace bench {

enum class Pattern { hot, random };
const char *to_string(Pattern pattern);

struct LookupResult {
    std::string cache;
    Pattern pattern = Pattern::hot;
    size_t entries = 0;
    int threads = 1;
    double median_ns = 0;   // per hit, median over batches
    double p99_ns = 0;      // per hit, 99th percentile over batches
    double mhits_per_s = 0; // all threads together
    uint64_t misses = 0;    // hits that failed (must be 0)
};

LookupResult measure_lookups(LookupCache &cache, const std::vector<Buffer> &buffers,
                             Pattern pattern, int threads, double seconds);

} // namespace bench
