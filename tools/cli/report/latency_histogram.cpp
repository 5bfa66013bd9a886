// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "report/latency_histogram.h"

#include <algorithm>

namespace gdrhook::cli {

// Values below sub_count each get their own bucket; above, a value with its
// highest bit at position b lands in group (b - sub_bits + 1), subdivided
// by its next sub_bits bits.
template <int SubBits> int BasicLatencyHistogram<SubBits>::bucket_of(uint64_t value)
{
    if (value < sub_count)
        return static_cast<int>(value);
    int top = 63 - __builtin_clzll(value);
    int group = top - sub_bits + 1;
    int sub = static_cast<int>((value >> (top - sub_bits)) & (sub_count - 1));
    return group * sub_count + sub;
}

template <int SubBits> uint64_t BasicLatencyHistogram<SubBits>::bucket_upper(int bucket)
{
    int group = bucket / sub_count;
    uint64_t sub = static_cast<uint64_t>(bucket % sub_count);
    if (group == 0)
        return sub;
    int shift = group - 1;
    uint64_t base = (uint64_t{sub_count} + sub) << shift;
    return base + ((uint64_t{1} << shift) - 1);
}

template <int SubBits> void BasicLatencyHistogram<SubBits>::add(int64_t value_ns)
{
    if (value_ns < 0)
        value_ns = 0; // clocks of two threads can disagree by a little
    ++buckets_[static_cast<size_t>(bucket_of(static_cast<uint64_t>(value_ns)))];
    ++count_;
    min_ = std::min(min_, value_ns);
    max_ = std::max(max_, value_ns);
    sum_ += static_cast<double>(value_ns);
}

template <int SubBits> int64_t BasicLatencyHistogram<SubBits>::percentile(double q) const
{
    if (count_ == 0)
        return 0;
    q = std::clamp(q, 0.0, 1.0);
    // The rank of the sample wanted, 1-based (nearest-rank method).
    auto rank = static_cast<uint64_t>(q * static_cast<double>(count_) + 0.999999);
    rank = std::clamp<uint64_t>(rank, 1, count_);
    uint64_t seen = 0;
    for (int b = 0; b < bucket_count; ++b) {
        seen += buckets_[static_cast<size_t>(b)];
        if (seen >= rank) {
            auto upper = static_cast<int64_t>(bucket_upper(b));
            return std::clamp(upper, min_, max_);
        }
    }
    return max_;
}

template <int SubBits>
void BasicLatencyHistogram<SubBits>::merge(const BasicLatencyHistogram &other)
{
    if (other.count_ == 0)
        return;
    for (size_t b = 0; b < buckets_.size(); ++b)
        buckets_[b] += other.buckets_[b];
    count_ += other.count_;
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
    sum_ += other.sum_;
}

template class BasicLatencyHistogram<5>;
template class BasicLatencyHistogram<3>;

} // namespace gdrhook::cli
