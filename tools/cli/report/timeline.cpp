// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "report/timeline.h"

#include <algorithm>

namespace gdrhook::cli {

namespace {

// One value into a bucket's highest and last; the first value a bucket
// gets is its highest so far.
void record(bool seen_before, uint64_t value, uint64_t &max, uint64_t &last)
{
    max = seen_before ? std::max(max, value) : value;
    last = value;
}

} // namespace

size_t TimelineBuilder::series_for(const ProcessKey &key)
{
    auto found = series_of_process_.find(key);
    if (found != series_of_process_.end())
        return found->second;
    size_t index;
    if (timeline_.series.size() - (other_ != SIZE_MAX) < max_series) {
        index = timeline_.series.size();
        timeline_.series.push_back({key.pid, key, {}, std::vector<TimelineBucket>(bucket_count)});
    } else {
        if (other_ == SIZE_MAX) {
            other_ = timeline_.series.size();
            timeline_.series.push_back(
                {-1, {}, "other processes", std::vector<TimelineBucket>(bucket_count)});
        }
        index = other_;
    }
    series_of_process_.emplace(key, index);
    return index;
}

void TimelineBuilder::halve_resolution()
{
    for (auto &series : timeline_.series) {
        auto &b = series.buckets;
        for (size_t i = 0; i < bucket_count / 2; ++i) {
            const TimelineBucket &first = b[2 * i], &second = b[2 * i + 1];
            TimelineBucket merged;
            merged.touched = first.touched || second.touched;
            merged.live_max = std::max(first.live_max, second.live_max);
            merged.pinned_max = std::max(first.pinned_max, second.pinned_max);
            const TimelineBucket &latest = second.touched ? second : first;
            merged.live_last = latest.live_last;
            merged.pinned_last = latest.pinned_last;
            merged.sampled = first.sampled || second.sampled;
            merged.rss_max = std::max(first.rss_max, second.rss_max);
            merged.fds_max = std::max(first.fds_max, second.fds_max);
            const TimelineBucket &latest_sample = second.sampled ? second : first;
            merged.rss_last = latest_sample.rss_last;
            merged.fds_last = latest_sample.fds_last;
            merged.frees = first.frees + second.frees;
            merged.revokes = first.revokes + second.revokes;
            b[i] = merged;
        }
        std::fill(b.begin() + bucket_count / 2, b.end(), TimelineBucket{});
    }
    timeline_.bucket_ns *= 2;
    timeline_.used_buckets = (timeline_.used_buckets + 1) / 2;
}

size_t TimelineBuilder::bucket_for(int64_t ts_ns)
{
    if (!timeline_.bucket_ns) { // the first event drawn
        timeline_.t0_ns = ts_ns;
        timeline_.bucket_ns = 1000; // start at 1 us per bucket and widen
    }
    // Threads' clocks can step back a little; such events join bucket 0.
    int64_t offset = std::max<int64_t>(ts_ns - timeline_.t0_ns, 0);
    while (static_cast<uint64_t>(offset / timeline_.bucket_ns) >= bucket_count)
        halve_resolution();
    auto bucket = static_cast<size_t>(offset / timeline_.bucket_ns);
    timeline_.used_buckets = std::max(timeline_.used_buckets, bucket + 1);
    return bucket;
}

void TimelineBuilder::add_sample(const LogEvent &event, const ProcessKey &key, size_t bucket)
{
    if (!event.has_rss && !event.has_fds)
        return; // not one this reader can draw
    ++timeline_.samples;
    size_t index = series_for(key);
    uint64_t rss = event.rss_bytes, fds = event.fds;
    if (index == other_) {
        auto &latest = other_samples_[key];
        other_rss_ += rss - latest.first;
        other_fds_ += fds - latest.second;
        latest = {rss, fds};
        rss = other_rss_;
        fds = other_fds_;
    }
    TimelineBucket &b = timeline_.series[index].buckets[bucket];
    record(b.sampled, rss, b.rss_max, b.rss_last);
    record(b.sampled, fds, b.fds_max, b.fds_last);
    b.sampled = true;
}

void TimelineBuilder::add(const LogEvent &event, const SourceLocation &where)
{
    ++timeline_.events;
    processes_.note(event, where);
    ProcessKey key = process_key(event, where);
    // Only what is drawn places the time axis: a `process` line is stamped
    // as its log opened, after the first events it introduces.
    switch (event.kind) {
    case EventKind::sample: add_sample(event, key, bucket_for(event.ts_ns)); return;
    case EventKind::alloc:
    case EventKind::free:
    case EventKind::pin:
    case EventKind::unpin:
    case EventKind::revoke:
    case EventKind::ctx_destroy: break;
    default: return;
    }
    size_t bucket = bucket_for(event.ts_ns);
    memory_.apply(event, where);
    size_t index = series_for(key);
    TimelineSeries &series = timeline_.series[index];

    uint64_t live, pinned;
    if (index == other_) {
        // The other processes together: everything not drawn on its own.
        live = memory_.total_live_gpu_bytes();
        pinned = memory_.total_pinned_bytes();
        for (const auto &s : timeline_.series) {
            if (s.pid == -1)
                continue;
            auto own = memory_.process(s.key);
            live -= own.live_gpu_bytes;
            pinned -= own.pinned_bytes;
        }
    } else {
        auto own = memory_.process(key);
        live = own.live_gpu_bytes;
        pinned = own.pinned_bytes;
    }
    TimelineBucket &b = series.buckets[bucket];
    record(b.touched, live, b.live_max, b.live_last);
    record(b.touched, pinned, b.pinned_max, b.pinned_last);
    b.touched = true;
    if (event.kind == EventKind::free && event.rc == 0)
        ++b.frees;
    if (event.kind == EventKind::revoke)
        ++b.revokes;
}

Timeline TimelineBuilder::finish()
{
    timeline_.processes = series_of_process_.size();
    for (TimelineSeries &series : timeline_.series)
        if (series.pid != -1)
            series.label = short_label(processes_.identity(series.key));
    return timeline_;
}

} // namespace gdrhook::cli
