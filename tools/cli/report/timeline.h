// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/log_event.h"
#include "report/memory_state.h"
#include "report/process_table.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace gdrhook::cli {

// One bucket of one series: the highest value seen in it (so a short peak
// still shows), the value it ended with (carried into empty buckets), and
// the frees and revocations that happened in it. `touched`: memory events
// fell in it; `sampled`: samples (GDRHOOK_SAMPLE_MS) did.
struct TimelineBucket {
    bool touched = false;
    bool sampled = false;
    uint64_t live_max = 0;
    uint64_t live_last = 0;
    uint64_t pinned_max = 0;
    uint64_t pinned_last = 0;
    uint64_t rss_max = 0;
    uint64_t rss_last = 0;
    uint64_t fds_max = 0;
    uint64_t fds_last = 0;
    uint32_t frees = 0;
    uint32_t revokes = 0;
};

struct TimelineSeries {
    int64_t pid = -1; // -1: the processes beyond max_series, together
    ProcessKey key;
    std::string label; // "rank 3 (node017)", "pid 300", "other processes"
    std::vector<TimelineBucket> buckets;
};

// Pinned and live GPU bytes over time per process, and the processes'
// own samples (resident memory, open fds) where the log has them,
// downsampled as it is read: a fixed number of buckets whose width
// doubles whenever the log runs past the last one, so memory does not
// grow with the log.
struct Timeline {
    int64_t t0_ns = 0;
    int64_t bucket_ns = 0;
    size_t used_buckets = 0; // buckets up to the last event
    uint64_t events = 0;
    uint64_t processes = 0;
    uint64_t samples = 0; // `sample` events among them
    std::vector<TimelineSeries> series;
};

class TimelineBuilder {
public:
    static constexpr size_t bucket_count = 1024;
    static constexpr size_t max_series = 10; // processes drawn on their own

    void add(const LogEvent &event, const SourceLocation &where);
    Timeline finish();

private:
    size_t series_for(const ProcessKey &key);
    size_t bucket_for(int64_t ts_ns);
    void halve_resolution();
    void add_sample(const LogEvent &event, const ProcessKey &key, size_t bucket);

    Timeline timeline_;
    MemoryState memory_{false}; // bytes only: no pin details
    ProcessTable processes_;
    std::unordered_map<ProcessKey, size_t, ProcessKeyHash> series_of_process_;
    size_t other_ = SIZE_MAX; // index of the "other processes" series
    // The latest sample of each process in the "other" series, and their
    // sums: what that series draws.
    std::unordered_map<ProcessKey, std::pair<uint64_t, uint64_t>, ProcessKeyHash> other_samples_;
    uint64_t other_rss_ = 0, other_fds_ = 0;
};

struct SvgOptions {
    std::string title;
    std::vector<std::string> files;
};

// A self-contained SVG: panels sharing the time axis (live GPU memory on
// top, pinned memory below it, and when the log has samples, each
// process's resident memory and open fds below those), one colour per
// process, free ticks and revocation triangles, axes with units and a
// legend.
std::string render_timeline_svg(const Timeline &timeline, const SvgOptions &options);

} // namespace gdrhook::cli
