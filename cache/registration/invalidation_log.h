// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The writer's log of frees, so that a pin that ran with no lock held can
// tell whether its range was freed meanwhile (cache_writer.h).
//
// Invariants: written and read under the writer's mutex only. While any pin
// is in flight every free is logged here, whatever its range; a pin that
// outlives a full lap cannot tell whether its range was among them and
// counts as invalidated (it pins again, and gives up after three tries).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace gdrhook {

class InvalidationLog {
public:
    // A thousand frees during one pin wrapped 256 records (tests/cache);
    // 4096 records are 96 KiB per cache.
    static constexpr size_t size = 4096;

    // Where the log stands: a pin notes it when it starts.
    uint64_t seq() const { return seq_; }

    // [start, end) was freed; the free concerns pins started up to the pin
    // clock `started_up_to`.
    void record(uint64_t start, uint64_t end, uint64_t started_up_to)
    {
        ++seq_;
        records_[seq_ % size] = {start, end, started_up_to};
    }

    // Whether a free logged after `since` concerns the pin of [start, end)
    // that started at pin clock `pin_started`.
    bool invalidated_since(uint64_t since, uint64_t start, uint64_t end,
                           uint64_t pin_started) const;

private:
    struct Record {
        uint64_t start = 0, end = 0;
        uint64_t started_up_to = 0; // concerns pins started up to this clock
    };

    std::array<Record, size> records_{};
    uint64_t seq_ = 0;
};

} // namespace gdrhook
