// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include <array>
#include <cstdint>

namespace gdrhook::cli {

// Percentiles of non-negative durations in fixed memory: log-linear
// buckets (each power of two split into 2^SubBits steps), so any
// percentile is within 1/2^SubBits of the true value however many samples
// there are. Minimum, maximum and mean are exact.
template <int SubBits> class BasicLatencyHistogram {
public:
    void add(int64_t value_ns);

    // Adds every sample of @p other.
    void merge(const BasicLatencyHistogram &other);

    uint64_t count() const { return count_; }
    int64_t min() const { return count_ ? min_ : 0; }
    int64_t max() const { return count_ ? max_ : 0; }
    double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }

    // The value at fraction @p q (0..1) of the samples; 0 when empty.
    int64_t percentile(double q) const;

private:
    static constexpr int sub_bits = SubBits;
    static constexpr int sub_count = 1 << sub_bits;
    static constexpr int bucket_count = (64 - sub_bits + 1) * sub_count;
    static int bucket_of(uint64_t value);
    static uint64_t bucket_upper(int bucket);

    std::array<uint64_t, bucket_count> buckets_{};
    uint64_t count_ = 0;
    int64_t min_ = INT64_MAX;
    int64_t max_ = 0;
    double sum_ = 0;
};

// 32 steps per power of two (about 3%), 15 KiB: the whole log's delays.
using LatencyHistogram = BasicLatencyHistogram<5>;
// 8 steps (about 12%), 4 KiB: one per process of a job.
using CoarseLatencyHistogram = BasicLatencyHistogram<3>;

extern template class BasicLatencyHistogram<5>;
extern template class BasicLatencyHistogram<3>;

} // namespace gdrhook::cli
