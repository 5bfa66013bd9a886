// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "summary.h"

#include <algorithm>

namespace gdrhook::cli {

void SummaryBuilder::count(Tally &tally, const LogEvent &event)
{
    bool ok = event.rc == 0;
    ++tally.count;
    tally.failed += !ok;
    tally.bytes += ok ? event.size : 0;
}

namespace {

void add_sample(ProcessSamples &p, const LogEvent &event)
{
    auto take = [first = p.count == 0](SampleRange &range, uint64_t value) {
        if (first)
            range.first = value;
        range.last = value;
        range.max = std::max(range.max, value);
    };
    if (p.count == 0)
        p.first_ts_ns = event.ts_ns;
    p.last_ts_ns = event.ts_ns;
    take(p.rss_bytes, event.rss_bytes);
    take(p.fds, event.fds);
    ++p.count;
}

} // namespace

void SummaryBuilder::add(const LogEvent &event, const SourceLocation &where)
{
    Summary &s = summary_;
    if (s.events == 0 || event.ts_ns < s.first_ts_ns)
        s.first_ts_ns = event.ts_ns;
    if (s.events == 0 || event.ts_ns > s.last_ts_ns)
        s.last_ts_ns = event.ts_ns;
    ++s.events;
    pids_.insert(event.pid);

    bool ok = event.rc == 0;
    count(s.by_kind[static_cast<size_t>(event.kind)], event);
    if (event.kind == EventKind::unknown)
        return; // counted, and otherwise ignored: the schema may grow

    count(by_api_[{names_.intern(event.ev), names_.intern(event.api)}], event);

    switch (event.kind) {
    case EventKind::alloc:
        count(allocs_by_mem_kind_[names_.intern(event.mem_kind.empty() ? "device" : event.mem_kind)],
              event);
        break;
    case EventKind::pin:
        count(pins_by_backend_[names_.intern(event.backend.empty() ? "unspecified" : event.backend)],
              event);
        break;
    case EventKind::unpin:
        if (ok && event.has_lat)
            s.unpin_delay.add(event.lat_ns);
        break;
    case EventKind::error: {
        s.verify_findings += is_verify_finding(event);
        std::string message = event.msg.empty() ? std::string(event.api) : event.msg;
        auto found = s.error_messages.find(message);
        if (found != s.error_messages.end())
            ++found->second;
        else if (s.error_messages.size() < max_error_messages)
            s.error_messages.emplace(std::move(message), 1);
        else
            ++s.error_messages["(other)"];
        break;
    }
    case EventKind::sample:
        add_sample(s.samples[event.pid], event);
        return; // describes the process, not its memory
    default:
        break;
    }

    memory_.apply(event, where);
    if (memory_.total_live_gpu_bytes() > s.peak_live_gpu_bytes) {
        s.peak_live_gpu_bytes = memory_.total_live_gpu_bytes();
        s.peak_live_ts_ns = event.ts_ns;
    }
    if (memory_.total_pinned_bytes() > s.peak_pinned_bytes) {
        s.peak_pinned_bytes = memory_.total_pinned_bytes();
        s.peak_pinned_ts_ns = event.ts_ns;
    }
}

Summary SummaryBuilder::finish(uint64_t files, uint64_t bytes_read, uint64_t malformed_lines)
{
    Summary s = summary_;
    s.files = files;
    s.bytes_read = bytes_read;
    s.malformed_lines = malformed_lines;
    s.processes = pids_.size();
    for (const auto &entry : by_api_)
        s.by_api[{std::string(entry.first.first), std::string(entry.first.second)}] = entry.second;
    for (const auto &entry : allocs_by_mem_kind_)
        s.allocs_by_mem_kind[std::string(entry.first)] = entry.second;
    for (const auto &entry : pins_by_backend_)
        s.pins_by_backend[std::string(entry.first)] = entry.second;
    s.live_allocations_at_end = memory_.live_allocations();
    s.live_gpu_bytes_at_end = memory_.total_live_gpu_bytes();
    auto pins = memory_.open_pins();
    s.pins_held_at_end = pins.size();
    s.pinned_bytes_at_end = memory_.total_pinned_bytes();
    return s;
}

} // namespace gdrhook::cli
