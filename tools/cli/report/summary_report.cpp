// SPDX-License-Identifier: MIT OR GPL-2.0-only
// Renders a Summary for people (aligned text) and for scripts (JSON).
#include "report/summary.h"
#include "report/units.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <vector>

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

// Hosts and processes listed in each table of the job section; the JSON
// has them all.
constexpr size_t max_job_rows = 10;

std::string delay_text(const DelayFigures &d)
{
    if (d.count == 0)
        return "no unpin delays";
    return "unpin delay p50 " + format_duration_ns(static_cast<double>(d.p50_ns)) + ", p99 " +
           format_duration_ns(static_cast<double>(d.p99_ns)) + ", max " +
           format_duration_ns(static_cast<double>(d.max_ns)) + " over " + std::to_string(d.count) +
           " unpin(s)";
}

// "(other)" and "" stand for what the map could not keep and for a
// `process` line without the key.
void print_distinct(std::ostream &out, const char *what,
                    const std::map<UntrustedText, uint64_t> &map)
{
    if (map.empty())
        return;
    out << "  " << map.size() << ' ' << what << "(s)" << (map.size() > 1 ? " (they differ)" : "")
        << '\n';
    for (const auto &[text, processes] : map)
        out << "    " << padded(std::to_string(processes), 8)
            << (text.empty() ? "(none given)" : text.shown()) << '\n';
}

// The first max_job_rows processes by @p better, with @p describe's text;
// processes for which @p listed is false are left out.
template <typename Better, typename Listed, typename Describe>
void print_ranking(std::ostream &out, const Summary &s, const char *title, Better better,
                   Listed listed, Describe describe)
{
    std::vector<const ProcessSummary *> rows;
    for (const ProcessSummary &p : s.by_process)
        if (listed(p.figures))
            rows.push_back(&p);
    out << '\n' << title;
    if (rows.empty()) {
        out << ": none\n";
        return;
    }
    out << '\n';
    size_t shown = std::min(rows.size(), max_job_rows);
    std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(shown), rows.end(),
                      [&](const ProcessSummary *a, const ProcessSummary *b) {
                          return better(a->figures, b->figures);
                      });
    for (size_t i = 0; i < shown; ++i)
        out << "  " << padded(short_label(rows[i]->who), 24) << describe(rows[i]->figures) << '\n';
    if (rows.size() > shown)
        out << "  ... and " << rows.size() - shown << " more (--json lists all)\n";
}

void print_job(std::ostream &out, const Summary &s)
{
    uint64_t ranked = 0;
    int64_t low = INT64_MAX, high = INT64_MIN;
    for (const ProcessSummary &p : s.by_process) {
        if (!p.who.has_rank)
            continue;
        ++ranked;
        low = std::min(low, p.who.rank);
        high = std::max(high, p.who.rank);
    }
    out << "\njob\n  " << s.by_process.size() << " process(es) on " << s.by_host.size()
        << " host(s); " << s.process_lines << " `process` line(s)";
    if (ranked)
        out << "; " << ranked << " with a rank (" << low << " to " << high << ")";
    if (ranked < s.by_process.size())
        out << "; " << s.by_process.size() - ranked << " without a rank";
    out << '\n';
    print_distinct(out, "gdrhook version", s.versions);
    print_distinct(out, "configuration", s.configurations);
    print_distinct(out, "command line", s.commands);

    out << "\nby host (most pinned memory first)\n";
    std::vector<const HostSummary *> hosts;
    for (const HostSummary &h : s.by_host)
        hosts.push_back(&h);
    std::stable_sort(hosts.begin(), hosts.end(), [](const HostSummary *a, const HostSummary *b) {
        return a->figures.peak_pinned_bytes > b->figures.peak_pinned_bytes;
    });
    for (size_t i = 0; i < hosts.size() && i < max_job_rows; ++i) {
        const HostSummary &host = *hosts[i];
        const JobFigures &h = host.figures;
        out << "  " << padded(host.host.empty() ? "(no process line)" : host.host.shown(), 20)
            << host.processes << " process(es), " << h.events << " event(s), " << h.pins
            << " pin(s), peak pinned " << format_bytes(static_cast<double>(h.peak_pinned_bytes))
            << ", " << delay_text(h.unpin_delay) << ", " << h.errors << " error(s)\n";
    }
    if (hosts.size() > max_job_rows)
        out << "  ... and " << hosts.size() - max_job_rows << " more host(s) (--json lists all)\n";

    print_ranking(
        out, s, "slowest unpins, by process (p99 of the delay from free to unpin)",
        [](const JobFigures &a, const JobFigures &b) {
            return a.unpin_delay.p99_ns != b.unpin_delay.p99_ns
                       ? a.unpin_delay.p99_ns > b.unpin_delay.p99_ns
                       : a.unpin_delay.max_ns > b.unpin_delay.max_ns;
        },
        [](const JobFigures &p) { return p.unpin_delay.count > 0; },
        [](const JobFigures &p) { return delay_text(p.unpin_delay); });
    print_ranking(
        out, s, "most pinned memory, by process (peak)",
        [](const JobFigures &a, const JobFigures &b) {
            return a.peak_pinned_bytes > b.peak_pinned_bytes;
        },
        [](const JobFigures &p) { return p.peak_pinned_bytes > 0; },
        [](const JobFigures &p) {
            return format_bytes(static_cast<double>(p.peak_pinned_bytes)) + " (" +
                   std::to_string(p.pins) + " pin(s))";
        });
    print_ranking(
        out, s, "errors, by process",
        [](const JobFigures &a, const JobFigures &b) { return a.errors > b.errors; },
        [](const JobFigures &p) { return p.errors > 0; },
        [](const JobFigures &p) {
            return std::to_string(p.errors) + " error event(s), " +
                   std::to_string(p.verify_findings) + " verify-mode finding(s)";
        });
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
    for (size_t k = 0; k < tallied_kind_count; ++k) {
        const Tally &t = s.by_kind[k];
        if (t.count == 0)
            continue;
        auto kind = static_cast<EventKind>(k);
        out << "  "
            << padded(kind == EventKind::unknown ? "(unknown, ignored)"
                                                 : std::string(kind_label(kind)),
                      20)
            << t.count;
        if (t.failed)
            out << "  (" << t.failed << " failed)";
        out << '\n';
    }

    out << "\nevents by API\n";
    for (const auto &entry : s.by_api) {
        out << "  " << padded(entry.first.first.shown(), 12)
            << padded(entry.first.second.shown(), 34) << entry.second.count;
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
    out << "  skips            " << kind_tally(s, EventKind::skip).count;
    sep = ": ";
    for (const auto &entry : s.skips_by_reason) {
        out << sep << entry.first << ' ' << entry.second;
        sep = ", ";
    }
    out << '\n';
    out << "  pinned memory    peak " << format_bytes(static_cast<double>(s.peak_pinned_bytes));
    if (s.peak_pinned_bytes)
        out << " at " << relative_time(s, s.peak_pinned_ts_ns);
    out << "; at end " << format_bytes(static_cast<double>(s.pinned_bytes_at_end)) << " in "
        << s.pins_held_at_end << " pin(s)\n";
    out << "  pointer queries  " << s.pointer_queries_answered << " answered, "
        << s.pointer_queries_forwarded << " forwarded\n";

    const LatencyHistogram &d = s.unpin_delay;
    out << "\nunpin delay (free to unpin)\n";
    if (d.count() == 0) {
        out << "  no unpins with a delay\n";
    } else {
        out << "  " << d.count() << " unpin(s): p50 "
            << format_duration_ns(static_cast<double>(d.percentile(0.5))) << ", p90 "
            << format_duration_ns(static_cast<double>(d.percentile(0.9))) << ", p99 "
            << format_duration_ns(static_cast<double>(d.percentile(0.99))) << ", max "
            << format_duration_ns(static_cast<double>(d.max())) << " (mean "
            << format_duration_ns(d.mean()) << ")\n";
    }

    if (!s.samples.empty()) {
        out << "\nprocess samples (first -> last, max)\n";
        size_t shown = 0;
        for (const auto &[key, p] : s.samples) {
            if (shown++ == max_sampled_processes_shown) {
                out << "  ... and " << s.samples.size() - max_sampled_processes_shown
                    << " more process(es) (--json lists all)\n";
                break;
            }
            out << "  " << padded(short_label(p.who), 12) << p.count << " sample(s) over "
                << format_duration_ns(static_cast<double>(p.last_ts_ns - p.first_ts_ns)) << ": rss "
                << format_bytes(static_cast<double>(p.rss_bytes.first)) << " -> "
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

    if (s.by_process.size() > 1 || s.process_lines > 0)
        print_job(out, s);
}

std::string summary_json(const Summary &s)
{
    using nlohmann::json;
    auto counts = [](const std::map<UntrustedText, uint64_t> &map) {
        json object = json::object();
        for (const auto &[text, count] : map)
            object[text.raw()] = count;
        return object;
    };
    auto tally = [](const Tally &t) {
        return json{{"count", t.count}, {"failed", t.failed}, {"bytes", t.bytes}};
    };
    json by_kind = json::object();
    for (size_t k = 0; k < tallied_kind_count; ++k)
        by_kind[std::string(kind_label(static_cast<EventKind>(k)))] = tally(s.by_kind[k]);
    json by_api = json::array();
    for (const auto &entry : s.by_api) {
        json row = tally(entry.second);
        row["ev"] = entry.first.first.raw();
        row["api"] = entry.first.second.raw();
        by_api.push_back(row);
    }
    json mem_kinds = json::object();
    for (const auto &entry : s.allocs_by_mem_kind)
        mem_kinds[entry.first.raw()] = tally(entry.second);
    json backends = json::object();
    for (const auto &entry : s.pins_by_backend)
        backends[entry.first.raw()] = tally(entry.second);
    json skip_reasons = json::object();
    for (const auto &entry : s.skips_by_reason)
        skip_reasons[entry.first.raw()] = entry.second;
    json messages = json::object();
    for (const auto &entry : s.error_messages)
        messages[entry.first.raw()] = entry.second;
    const LatencyHistogram &d = s.unpin_delay;
    auto range = [](const SampleRange &r) {
        return json{{"first", r.first}, {"last", r.last}, {"max", r.max}};
    };
    auto identity = [](const ProcessIdentity &who) {
        json row = {{"pid", who.key.pid}, {"file", who.key.file}};
        if (!who.host.empty())
            row["host"] = who.host.raw();
        if (who.has_rank)
            row["rank"] = who.rank;
        return row;
    };
    auto figures = [](const JobFigures &f) {
        const DelayFigures &d = f.unpin_delay;
        return json{
            {"events", f.events},
            {"pins", f.pins},
            {"unpins", f.unpins},
            {"errors", f.errors},
            {"verify_findings", f.verify_findings},
            {"peak_pinned_bytes", f.peak_pinned_bytes},
            {"peak_live_gpu_bytes", f.peak_live_gpu_bytes},
            {"unpin_delay_ns",
             {{"count", d.count}, {"p50", d.p50_ns}, {"p99", d.p99_ns}, {"max", d.max_ns}}}};
    };
    json by_process = json::array();
    for (const ProcessSummary &p : s.by_process) {
        json row = identity(p.who);
        row.update(figures(p.figures));
        by_process.push_back(row);
    }
    json by_host = json::array();
    for (const HostSummary &h : s.by_host) {
        json row = {{"host", h.host.raw()}, {"processes", h.processes}};
        row.update(figures(h.figures));
        by_host.push_back(row);
    }

    json samples = json::array();
    for (const auto &[key, p] : s.samples)
        samples.push_back({{"pid", p.who.key.pid},
                           {"file", p.who.key.file},
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
        {"skips_by_reason", skip_reasons},
        {"live_gpu",
         {{"peak_bytes", s.peak_live_gpu_bytes},
          {"peak_ts_ns", s.peak_live_ts_ns},
          {"bytes_at_end", s.live_gpu_bytes_at_end},
          {"allocations_at_end", s.live_allocations_at_end}}},
        {"pinned",
         {{"peak_bytes", s.peak_pinned_bytes},
          {"peak_ts_ns", s.peak_pinned_ts_ns},
          {"bytes_at_end", s.pinned_bytes_at_end},
          {"pins_at_end", s.pins_held_at_end}}},
        {"unpin_delay_ns",
         {{"count", d.count()},
          {"min", d.min()},
          {"p50", d.percentile(0.5)},
          {"p90", d.percentile(0.9)},
          {"p99", d.percentile(0.99)},
          {"max", d.max()},
          {"mean", d.mean()}}},
        {"errors",
         {{"count", s.by_kind[static_cast<size_t>(EventKind::error)].count},
          {"verify_findings", s.verify_findings},
          {"messages", messages}}},
        {"pointer_queries",
         {{"answered", s.pointer_queries_answered}, {"forwarded", s.pointer_queries_forwarded}}},
        {"samples", samples},
        {"process_lines", s.process_lines},
        {"versions", counts(s.versions)},
        {"configurations", counts(s.configurations)},
        {"commands", counts(s.commands)},
        {"by_process", by_process},
        {"by_host", by_host},
    };
    // For a script, but often read on a terminal: every byte past ASCII
    // as \uXXXX, and DEL, which JSON leaves as it is, too; a file name
    // that is not UTF-8 has U+FFFD for its odd bytes.
    std::string text = out.dump(2, ' ', true, json::error_handler_t::replace);
    for (size_t at = text.find('\x7f'); at != std::string::npos; at = text.find('\x7f', at))
        text.replace(at, 1, "\\u007f");
    return text + "\n";
}

} // namespace gdrhook::cli
