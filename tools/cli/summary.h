// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "latency_histogram.h"
#include "log_event.h"
#include "memory_state.h"
#include "string_table.h"

#include <array>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace gdrhook::cli {

// Counts and bytes for one row of the summary.
struct Tally {
    uint64_t count = 0;
    uint64_t failed = 0; // rc != 0
    uint64_t bytes = 0;  // of the successful ones
};

// First, last and highest value of one measurement across a process's
// samples.
struct SampleRange {
    uint64_t first = 0;
    uint64_t last = 0;
    uint64_t max = 0;
};

// What the `sample` events of one process (GDRHOOK_SAMPLE_MS) showed.
struct ProcessSamples {
    uint64_t count = 0;
    int64_t first_ts_ns = 0;
    int64_t last_ts_ns = 0;
    SampleRange rss_bytes;
    SampleRange fds;
};

// Everything `log summary` reports. Built in one pass, in memory bounded
// by what is live at one time and by the number of distinct API names.
struct Summary {
    uint64_t files = 0;
    uint64_t bytes_read = 0;
    uint64_t malformed_lines = 0;
    uint64_t events = 0; // well-formed lines, unknown kinds included
    uint64_t processes = 0;
    int64_t first_ts_ns = 0;
    int64_t last_ts_ns = 0;

    std::array<Tally, event_kind_count> by_kind{};
    std::map<std::pair<std::string, std::string>, Tally> by_api; // (ev, api)
    std::map<std::string, Tally> allocs_by_mem_kind;
    std::map<std::string, Tally> pins_by_backend;

    uint64_t live_allocations_at_end = 0;
    uint64_t live_gpu_bytes_at_end = 0;
    uint64_t peak_live_gpu_bytes = 0;
    int64_t peak_live_ts_ns = 0;

    uint64_t pins_held_at_end = 0;
    uint64_t pinned_bytes_at_end = 0;
    uint64_t peak_pinned_bytes = 0;
    int64_t peak_pinned_ts_ns = 0;

    LatencyHistogram unpin_delay;

    uint64_t verify_findings = 0;
    std::map<std::string, uint64_t> error_messages; // capped, see SummaryBuilder

    std::map<int64_t, ProcessSamples> samples; // by pid; processes with samples only
};

class SummaryBuilder {
public:
    // Distinct error messages kept; further ones are counted as "(other)".
    static constexpr size_t max_error_messages = 64;

    void add(const LogEvent &event, const SourceLocation &where);
    Summary finish(uint64_t files, uint64_t bytes_read, uint64_t malformed_lines);

private:
    struct PairHash {
        size_t operator()(const std::pair<std::string_view, std::string_view> &p) const
        {
            return std::hash<std::string_view>()(p.first) * 31 + std::hash<std::string_view>()(p.second);
        }
    };
    static void count(Tally &tally, const LogEvent &event);

    Summary summary_;
    MemoryState memory_;
    std::unordered_set<int64_t> pids_;
    // Keyed by views of our own copies of the names: no allocation per
    // event, and the keys outlive the reader. Turned into Summary's
    // sorted maps by finish().
    StringTable names_;
    std::unordered_map<std::pair<std::string_view, std::string_view>, Tally, PairHash> by_api_;
    std::unordered_map<std::string_view, Tally> allocs_by_mem_kind_;
    std::unordered_map<std::string_view, Tally> pins_by_backend_;
};

// The human-readable report.
void print_summary(std::ostream &out, const Summary &summary);

// The same as one JSON object (stable keys, for scripts).
std::string summary_json(const Summary &summary);

} // namespace gdrhook::cli

