// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/prim/profile.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>

namespace gdrhook {
namespace {

// 8 buckets for 0 to 7 ticks, then 8 for each power of two up to 2^63.
constexpr size_t sub_bits = 3;
constexpr size_t subs = size_t{1} << sub_bits;
constexpr size_t bucket_count = (64 - sub_bits + 1) * subs;

struct alignas(64) PartHistogram {
    std::atomic<uint64_t> count{0}, sum{0}, max{0};
    std::array<std::atomic<uint64_t>, bucket_count> buckets{};
};

// Zero-initialized, untouched until a profiled run times something.
std::array<PartHistogram, static_cast<size_t>(ProfilePart::count)> histograms;

constexpr const char *part_names[] = {
    "reclaim_lock_wait",
    "reclaim_round",
    "release",
    "release_wait_in_flight",
    "free_unpin",
    "unpin_latency",
    "unpin_latency_by_worker",
    "reclaim_memory",
    "free_before_real",
    "free_after_real",
    "pair_clock",
    "pair_tracker",
    "pair_context",
    "pair_push",
    "pair_alloc_listeners",
    "writer_event",
};
static_assert(std::size(part_names) == static_cast<size_t>(ProfilePart::count),
              "a name for each part");

// The nearest rank's bucket: the first whose running count reaches
// `fraction` of the count, rounded up.
uint64_t percentile(const PartHistogram &h, uint64_t count, double fraction)
{
    const uint64_t rank = std::max<uint64_t>(
        1, static_cast<uint64_t>(std::ceil(fraction * static_cast<double>(count))));
    uint64_t seen = 0;
    for (size_t b = 0; b < bucket_count; ++b) {
        seen += h.buckets[b].load(std::memory_order_relaxed);
        if (seen >= rank)
            return profile_bucket_value(b);
    }
    return h.max.load(std::memory_order_relaxed);
}

} // namespace

const char *to_string(ProfilePart part)
{
    return part_names[static_cast<size_t>(part)];
}

size_t profile_bucket(uint64_t ticks)
{
    if (ticks < subs)
        return ticks;
    const size_t top = 63 - static_cast<size_t>(__builtin_clzll(ticks));
    return (top - sub_bits + 1) * subs + ((ticks >> (top - sub_bits)) & (subs - 1));
}

uint64_t profile_bucket_value(size_t bucket)
{
    if (bucket < subs)
        return bucket;
    const size_t top = bucket / subs + sub_bits - 1;
    const uint64_t low = (subs + bucket % subs) << (top - sub_bits);
    const uint64_t width = uint64_t{1} << (top - sub_bits);
    return low + width / 2;
}

void profile_add(ProfilePart part, uint64_t ticks)
{
    PartHistogram &h = histograms[static_cast<size_t>(part)];
    h.count.fetch_add(1, std::memory_order_relaxed);
    h.sum.fetch_add(ticks, std::memory_order_relaxed);
    h.buckets[profile_bucket(ticks)].fetch_add(1, std::memory_order_relaxed);
    uint64_t seen = h.max.load(std::memory_order_relaxed);
    while (ticks > seen && !h.max.compare_exchange_weak(seen, ticks, std::memory_order_relaxed)) {
    }
}

std::vector<ProfileSummary> profile_summaries()
{
    std::vector<ProfileSummary> out;
    for (size_t p = 0; p < histograms.size(); ++p) {
        const PartHistogram &h = histograms[p];
        ProfileSummary s;
        s.part = static_cast<ProfilePart>(p);
        s.count = h.count.load(std::memory_order_relaxed);
        if (!s.count)
            continue;
        s.sum = h.sum.load(std::memory_order_relaxed);
        s.max = h.max.load(std::memory_order_relaxed);
        // A bucket's middle may lie past the largest value it holds.
        s.p50 = std::min(percentile(h, s.count, 0.50), s.max);
        s.p99 = std::min(percentile(h, s.count, 0.99), s.max);
        out.push_back(s);
    }
    return out;
}

std::vector<std::string> profile_report(uint64_t ticks_per_ms)
{
    std::vector<std::string> lines;
    if (!ticks_per_ms)
        return lines;
    for (const ProfileSummary &s : profile_summaries()) {
        const bool in_ns =
            s.part == ProfilePart::unpin_latency || s.part == ProfilePart::unpin_latency_by_worker;
        auto ns = [&](double value) {
            return in_ns ? value : value * 1e6 / static_cast<double>(ticks_per_ms);
        };
        char line[256];
        std::snprintf(line, sizeof line,
                      "profile: %s n=%llu mean_ns=%.0f p50_ns=%.0f p99_ns=%.0f max_ns=%.0f "
                      "total_ms=%.3f",
                      to_string(s.part), static_cast<unsigned long long>(s.count),
                      ns(static_cast<double>(s.sum) / static_cast<double>(s.count)),
                      ns(static_cast<double>(s.p50)), ns(static_cast<double>(s.p99)),
                      ns(static_cast<double>(s.max)), ns(static_cast<double>(s.sum)) / 1e6);
        lines.emplace_back(line);
    }
    return lines;
}

} // namespace gdrhook
