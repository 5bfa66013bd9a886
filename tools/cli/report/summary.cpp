// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "report/summary.h"

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

size_t SummaryBuilder::host_index(const std::string &host)
{
    auto found = host_of_name_.find(host);
    if (found != host_of_name_.end())
        return found->second;
    hosts_.emplace_back();
    hosts_.back().summary.host = UntrustedText(host);
    host_of_name_.emplace(host, hosts_.size() - 1);
    return hosts_.size() - 1;
}

uint32_t SummaryBuilder::process_for(const ProcessKey &key)
{
    if (key.file >= last_of_file_.size())
        last_of_file_.resize(key.file + 1, {0, UINT32_MAX});
    auto &last = last_of_file_[key.file];
    if (last.second != UINT32_MAX && last.first == key.pid)
        return last.second;
    auto [found, added] = process_of_key_.emplace(key, static_cast<uint32_t>(processes_.size()));
    if (added) {
        processes_.emplace_back().summary.who.key = key;
        // What the file's `process` lines said so far, which is what the
        // event order gives this file at this point whatever the others.
        ProcessBytes &bytes = process_bytes_.emplace_back();
        bytes.host = host_index(table_.identity(key).host.raw());
        ++hosts_[bytes.host].summary.processes;
    }
    last = {key.pid, found->second};
    return found->second;
}

// A `process` line names the host; the process moves there, with what it
// holds, if its earlier lines had put it elsewhere.
void SummaryBuilder::note_process_line(ProcessBytes &process, const LogEvent &event)
{
    Summary &s = summary_;
    ++s.process_lines;
    auto count_distinct = [](std::map<UntrustedText, uint64_t> &map, const std::string &text) {
        UntrustedText key(text);
        auto found = map.find(key);
        if (found != map.end())
            ++found->second;
        else if (map.size() < max_distinct_processes)
            map.emplace(std::move(key), 1);
        else
            ++map[UntrustedText("(other)")];
    };
    count_distinct(s.versions, event.process.version);
    count_distinct(s.configurations, event.process.config);
    count_distinct(s.commands, event.process.cmdline);

    size_t host = host_index(event.process.host);
    if (host == process.host)
        return;
    HostTotals &from = hosts_[process.host], &to = hosts_[host];
    --from.summary.processes;
    from.pinned_bytes -= process.pinned_bytes;
    from.live_gpu_bytes -= process.live_gpu_bytes;
    ++to.summary.processes;
    to.pinned_bytes += process.pinned_bytes;
    to.live_gpu_bytes += process.live_gpu_bytes;
    process.host = host;
}

void SummaryBuilder::count_error_message(const LogEvent &event)
{
    auto &messages = summary_.error_messages;
    UntrustedText message(event.msg.empty() ? std::string(event.api) : event.msg);
    auto found = messages.find(message);
    if (found != messages.end())
        ++found->second;
    else if (messages.size() < max_error_messages)
        messages.emplace(std::move(message), 1);
    else
        ++messages[UntrustedText("(other)")];
}

// The process's, its host's and the job's live and pinned bytes after an
// event, and their peaks.
void SummaryBuilder::note_memory(ProcessBytes &process, const JobStep &step)
{
    HostTotals &host = hosts_[process.host];
    host.pinned_bytes += step.pinned_bytes - process.pinned_bytes;
    host.live_gpu_bytes += step.live_gpu_bytes - process.live_gpu_bytes;
    total_pinned_bytes_ += step.pinned_bytes - process.pinned_bytes;
    total_live_gpu_bytes_ += step.live_gpu_bytes - process.live_gpu_bytes;
    process.pinned_bytes = step.pinned_bytes;
    process.live_gpu_bytes = step.live_gpu_bytes;
    process.peak_pinned_bytes = std::max(process.peak_pinned_bytes, process.pinned_bytes);
    process.peak_live_gpu_bytes = std::max(process.peak_live_gpu_bytes, process.live_gpu_bytes);
    JobFigures &h = host.summary.figures;
    h.peak_pinned_bytes = std::max(h.peak_pinned_bytes, host.pinned_bytes);
    h.peak_live_gpu_bytes = std::max(h.peak_live_gpu_bytes, host.live_gpu_bytes);
    Summary &s = summary_;
    if (total_live_gpu_bytes_ > s.peak_live_gpu_bytes) {
        s.peak_live_gpu_bytes = total_live_gpu_bytes_;
        s.peak_live_ts_ns = step.ts_ns;
    }
    if (total_pinned_bytes_ > s.peak_pinned_bytes) {
        s.peak_pinned_bytes = total_pinned_bytes_;
        s.peak_pinned_ts_ns = step.ts_ns;
    }
}

void SummaryBuilder::add(const LogEvent &event, const SourceLocation &where)
{
    JobStep step = digest(event, where);
    take(step, &event, where);
}

JobStep SummaryBuilder::digest(const LogEvent &event, const SourceLocation &where)
{
    Summary &s = summary_;
    if (s.events == 0 || event.ts_ns < s.first_ts_ns)
        s.first_ts_ns = event.ts_ns;
    if (s.events == 0 || event.ts_ns > s.last_ts_ns)
        s.last_ts_ns = event.ts_ns;
    ++s.events;
    table_.note(event, where);
    ProcessKey key = process_key(event, where);
    JobStep step;
    step.ts_ns = event.ts_ns;
    step.process = process_for(key);
    ProcessTotals &process = processes_[step.process];
    JobFigures &per_process = process.summary.figures;
    ++per_process.events;

    bool ok = event.rc == 0;
    count(s.by_kind[static_cast<size_t>(event.kind)], event);
    if (event.kind == EventKind::unknown)
        return step; // counted, and otherwise ignored: the schema may grow
    if (event.kind == EventKind::process) {
        step.kind = JobStep::Kind::process_line;
        return step; // describes the process, not a call
    }

    count(by_api_[{names_.intern(event.ev), names_.intern(event.api)}], event);

    step.kind = JobStep::Kind::memory;
    switch (event.kind) {
    case EventKind::alloc:
        count(allocs_by_mem_kind_[names_.intern(
                  event.mem_kind.empty() ? to_string(MemoryKind::device) : event.mem_kind)],
              event);
        break;
    case EventKind::pin:
        count(
            pins_by_backend_[names_.intern(event.backend.empty() ? "unspecified" : event.backend)],
            event);
        per_process.pins += ok;
        break;
    case EventKind::skip:
        ++skips_by_reason_[names_.intern(event.reason.empty() ? "unspecified" : event.reason)];
        break;
    case EventKind::unpin:
        per_process.unpins += ok;
        if (ok && event.has_lat) {
            // Integral nanoseconds: the histograms' sums are exact, in any
            // order, below 2^53 ns (104 days) in all.
            s.unpin_delay.add(event.lat_ns);
            process.delay.add(event.lat_ns);
        }
        break;
    case EventKind::error:
        s.verify_findings += is_verify_finding(event);
        ++per_process.errors;
        per_process.verify_findings += is_verify_finding(event);
        step.kind = JobStep::Kind::error;
        break;
    case EventKind::sample:
        add_sample(s.samples[{key.file, key.pid}], event);
        step.kind = JobStep::Kind::other;
        return step; // describes the process, not its memory
    case EventKind::queries:
        s.pointer_queries_answered += event.answered;
        s.pointer_queries_forwarded += event.forwarded;
        step.kind = JobStep::Kind::other;
        return step;
    default: break;
    }

    Outcome outcome = memory_.apply(event, where);
    step.live_gpu_bytes = outcome.live_gpu_bytes;
    step.pinned_bytes = outcome.pinned_bytes;
    return step;
}

void SummaryBuilder::take(const JobStep &step, const LogEvent *detail, const SourceLocation &)
{
    ProcessBytes &process = process_bytes_[step.process];
    switch (step.kind) {
    case JobStep::Kind::process_line: note_process_line(process, *detail); break;
    case JobStep::Kind::error:
        count_error_message(*detail);
        note_memory(process, step);
        break;
    case JobStep::Kind::memory: note_memory(process, step); break;
    case JobStep::Kind::other:
    case JobStep::Kind::whole_event: // not made here (EveryEvent's)
        break;
    }
}

Summary SummaryBuilder::finish(uint64_t files, uint64_t bytes_read, uint64_t malformed_lines)
{
    Summary s = summary_;
    s.files = files;
    s.bytes_read = bytes_read;
    s.malformed_lines = malformed_lines;
    s.processes = processes_.size();
    auto figures = [](const CoarseLatencyHistogram &delay) {
        return DelayFigures{delay.count(), delay.percentile(0.5), delay.percentile(0.99),
                            delay.max()};
    };
    std::vector<CoarseLatencyHistogram> host_delays(hosts_.size());
    for (size_t i = 0; i < processes_.size(); ++i) {
        const ProcessTotals &process = processes_[i];
        const ProcessBytes &bytes = process_bytes_[i];
        ProcessSummary summary = process.summary;
        summary.who = table_.identity(process.summary.who.key);
        summary.figures.peak_pinned_bytes = bytes.peak_pinned_bytes;
        summary.figures.peak_live_gpu_bytes = bytes.peak_live_gpu_bytes;
        summary.figures.unpin_delay = figures(process.delay);
        s.by_process.push_back(summary);
        const JobFigures &p = summary.figures;
        JobFigures &h = hosts_[bytes.host].summary.figures;
        h.events += p.events;
        h.pins += p.pins;
        h.unpins += p.unpins;
        h.errors += p.errors;
        h.verify_findings += p.verify_findings;
        host_delays[bytes.host].merge(process.delay);
    }
    std::sort(s.by_process.begin(), s.by_process.end(),
              [](const ProcessSummary &a, const ProcessSummary &b) {
                  return a.who.key.file != b.who.key.file ? a.who.key.file < b.who.key.file
                                                          : a.who.key.pid < b.who.key.pid;
              });
    for (size_t i = 0; i < hosts_.size(); ++i) {
        if (hosts_[i].summary.processes == 0)
            continue; // every process it had moved to the host its `process` line names
        s.by_host.push_back(hosts_[i].summary);
        s.by_host.back().figures.unpin_delay = figures(host_delays[i]);
    }
    std::sort(s.by_host.begin(), s.by_host.end(),
              [](const HostSummary &a, const HostSummary &b) { return a.host < b.host; });
    for (auto &[key, samples] : s.samples)
        samples.who = table_.identity({key.first, key.second});
    for (const auto &entry : by_api_)
        s.by_api[{UntrustedText(std::string(entry.first.first)),
                  UntrustedText(std::string(entry.first.second))}] = entry.second;
    for (const auto &entry : allocs_by_mem_kind_)
        s.allocs_by_mem_kind[UntrustedText(std::string(entry.first))] = entry.second;
    for (const auto &entry : skips_by_reason_)
        s.skips_by_reason[UntrustedText(std::string(entry.first))] = entry.second;
    for (const auto &entry : pins_by_backend_)
        s.pins_by_backend[UntrustedText(std::string(entry.first))] = entry.second;
    s.live_allocations_at_end = memory_.live_allocations();
    s.live_gpu_bytes_at_end = memory_.total_live_gpu_bytes();
    s.pins_held_at_end = memory_.pins_held();
    s.pinned_bytes_at_end = memory_.total_pinned_bytes();
    return s;
}

} // namespace gdrhook::cli
