// SPDX-License-Identifier: MIT OR GPL-2.0-only
// Renders a Summary for people (aligned text) and for scripts (JSON).
#include "summary.h"
#include "units.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <ostream>

namespace gdrhook::cli {

namespace {

std::string relative_time(const Summary &s, int64_t ts_ns)
{
    return "+" + format_duration_ns(static_cast<double>(ts_ns - s.first_ts_ns));
}

std::string padded(const std::string &text, size_t width)
{
    return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

// Processes with samples listed one per line; the JSON has them all.
constexpr size_t max_sampled_processes_shown = 20;

const Tally &kind_tally(const Summary &s, EventKind kind)
{
    return s.by_kind[static_cast<size_t>(kind)];
}

} // namespace

void print_summary(std::ostream &out, const Summary &s)
{
    out << "gdrhook log summary: " << s.files << " file(s), " << s.events << " event(s)";
    if (s.events == 0) {
        out << "\n  no events";
        if (s.malformed_lines)
            out << " (" << s.malformed_lines << " malformed line(s) skipped)";
        out << '\n';
        return;
    }
    out << " from " << s.processes << " process(es) over "
        << format_duration_ns(static_cast<double>(s.last_ts_ns - s.first_ts_ns)) << '\n';
    if (s.malformed_lines)
        out << "  " << s.malformed_lines << " malformed line(s) skipped\n";

    out << "\nevents by kind\n";
    for (int k = 0; k < event_kind_count; ++k) {
        const Tally &t = s.by_kind[static_cast<size_t>(k)];
        if (t.count == 0)
            continue;
        auto kind = static_cast<EventKind>(k);
        out << "  " << padded(kind == EventKind::unknown ? "(unknown, ignored)" : std::string(to_string(kind)), 20)
            << t.count;
        if (t.failed)
            out << "  (" << t.failed << " failed)";
        out << '\n';
    }

    out << "\nevents by API\n";
    for (const auto &entry : s.by_api) {
        out << "  " << padded(entry.first.first, 12) << padded(entry.first.second, 34)
            << entry.second.count;
        if (entry.second.failed)
            out << "  (" << entry.second.failed << " failed)";
        out << '\n';
    }

    out << "\nmemory\n";
    const Tally &allocs = kind_tally(s, EventKind::alloc);
    out << "  allocations      " << allocs.count - allocs.failed << " ("
        << format_bytes(static_cast<double>(allocs.bytes)) << ")";
    std::string sep = ": ";
    for (const auto &entry : s.allocs_by_mem_kind) {
        out << sep << entry.first << ' ' << entry.second.count - entry.second.failed;
        sep = ", ";
    }
    out << '\n';
    const Tally &frees = kind_tally(s, EventKind::free);
    out << "  frees            " << frees.count - frees.failed << '\n';
    out << "  live GPU memory  peak " << format_bytes(static_cast<double>(s.peak_live_gpu_bytes));
    if (s.peak_live_gpu_bytes)
        out << " at " << relative_time(s, s.peak_live_ts_ns);
    out << "; at end " << format_bytes(static_cast<double>(s.live_gpu_bytes_at_end)) << " in "
        << s.live_allocations_at_end << " allocation(s)\n";

    out << "\npins\n";
    const Tally &pins = kind_tally(s, EventKind::pin);
    out << "  pins             " << pins.count - pins.failed << " ("
        << format_bytes(static_cast<double>(pins.bytes)) << ")";
    sep = ": ";
    for (const auto &entry : s.pins_by_backend) {
        out << sep << entry.first << ' ' << entry.second.count - entry.second.failed;
        sep = ", ";
    }
    if (pins.failed)
        out << "; " << pins.failed << " failed";
    out << '\n';
    const Tally &unpins = kind_tally(s, EventKind::unpin);
    out << "  unpins           " << unpins.count - unpins.failed;
    if (unpins.failed)
        out << " (" << unpins.failed << " failed)";
    out << '\n';
    out << "  revocations      " << kind_tally(s, EventKind::revoke).count << '\n';
    out << "  pinned memory    peak " << format_bytes(static_cast<double>(s.peak_pinned_bytes));
    if (s.peak_pinned_bytes)
        out << " at " << relative_time(s, s.peak_pinned_ts_ns);
    out << "; at end " << format_bytes(static_cast<double>(s.pinned_bytes_at_end)) << " in "
        << s.pins_held_at_end << " pin(s)\n";

    const LatencyHistogram &d = s.unpin_delay;
    out << "\nunpin delay (free to unpin)\n";
    if (d.count() == 0) {
        out << "  no unpins with a delay\n";
    } else {
        out << "  " << d.count() << " unpin(s): p50 " << format_duration_ns(static_cast<double>(d.percentile(0.5)))
            << ", p90 " << format_duration_ns(static_cast<double>(d.percentile(0.9)))
            << ", p99 " << format_duration_ns(static_cast<double>(d.percentile(0.99)))
            << ", max " << format_duration_ns(static_cast<double>(d.max()))
            << " (mean " << format_duration_ns(d.mean()) << ")\n";
    }

    if (!s.samples.empty()) {
        out << "\nprocess samples (first -> last, max)\n";
        size_t shown = 0;
        for (const auto &[pid, p] : s.samples) {
            if (shown++ == max_sampled_processes_shown) {
                out << "  ... and " << s.samples.size() - max_sampled_processes_shown
                    << " more process(es) (--json lists all)\n";
                break;
            }
            out << "  pid " << padded(std::to_string(pid), 8) << p.count << " sample(s) over "
                << format_duration_ns(static_cast<double>(p.last_ts_ns - p.first_ts_ns))
                << ": rss " << format_bytes(static_cast<double>(p.rss_bytes.first)) << " -> "
                << format_bytes(static_cast<double>(p.rss_bytes.last)) << " (max "
                << format_bytes(static_cast<double>(p.rss_bytes.max)) << "), open fds "
                << p.fds.first << " -> " << p.fds.last << " (max " << p.fds.max << ")\n";
        }
    }

    const Tally &errors = kind_tally(s, EventKind::error);
    out << "\nerrors\n  " << errors.count << " error event(s), " << s.verify_findings
        << " verify-mode finding(s)\n";
    for (const auto &entry : s.error_messages)
        out << "    " << padded(std::to_string(entry.second), 8) << entry.first << '\n';
}

std::string summary_json(const Summary &s)
{
    using nlohmann::json;
    auto tally = [](const Tally &t) {
        return json{{"count", t.count}, {"failed", t.failed}, {"bytes", t.bytes}};
    };
    json by_kind = json::object();
    for (int k = 0; k < event_kind_count; ++k)
        by_kind[std::string(to_string(static_cast<EventKind>(k)))] =
            tally(s.by_kind[static_cast<size_t>(k)]);
    json by_api = json::array();
    for (const auto &entry : s.by_api) {
        json row = tally(entry.second);
        row["ev"] = entry.first.first;
        row["api"] = entry.first.second;
        by_api.push_back(row);
    }
    json mem_kinds = json::object();
    for (const auto &entry : s.allocs_by_mem_kind)
        mem_kinds[entry.first] = tally(entry.second);
    json backends = json::object();
    for (const auto &entry : s.pins_by_backend)
        backends[entry.first] = tally(entry.second);
    json messages = json::object();
    for (const auto &entry : s.error_messages)
        messages[entry.first] = entry.second;
    const LatencyHistogram &d = s.unpin_delay;
    auto range = [](const SampleRange &r) {
        return json{{"first", r.first}, {"last", r.last}, {"max", r.max}};
    };
    json samples = json::array();
    for (const auto &[pid, p] : s.samples)
        samples.push_back({{"pid", pid},
                           {"count", p.count},
                           {"first_ts_ns", p.first_ts_ns},
                           {"last_ts_ns", p.last_ts_ns},
                           {"rss_bytes", range(p.rss_bytes)},
                           {"fds", range(p.fds)}});

    json out = {
        {"files", s.files},
        {"bytes_read", s.bytes_read},
        {"malformed_lines", s.malformed_lines},
        {"events", s.events},
        {"processes", s.processes},
        {"first_ts_ns", s.first_ts_ns},
        {"last_ts_ns", s.last_ts_ns},
        {"by_kind", by_kind},
        {"by_api", by_api},
        {"allocations_by_kind", mem_kinds},
        {"pins_by_backend", backends},
        {"live_gpu", {{"peak_bytes", s.peak_live_gpu_bytes},
                      {"peak_ts_ns", s.peak_live_ts_ns},
                      {"bytes_at_end", s.live_gpu_bytes_at_end},
                      {"allocations_at_end", s.live_allocations_at_end}}},
        {"pinned", {{"peak_bytes", s.peak_pinned_bytes},
                    {"peak_ts_ns", s.peak_pinned_ts_ns},
                    {"bytes_at_end", s.pinned_bytes_at_end},
                    {"pins_at_end", s.pins_held_at_end}}},
        {"unpin_delay_ns", {{"count", d.count()},
                            {"min", d.min()},
                            {"p50", d.percentile(0.5)},
                            {"p90", d.percentile(0.9)},
                            {"p99", d.percentile(0.99)},
                            {"max", d.max()},
                            {"mean", d.mean()}}},
        {"errors", {{"count", s.by_kind[static_cast<size_t>(EventKind::error)].count},
                    {"verify_findings", s.verify_findings},
                    {"messages", messages}}},
        {"samples", samples},
    };
    return out.dump(2) + "\n";
}

} // namespace gdrhook::cli
