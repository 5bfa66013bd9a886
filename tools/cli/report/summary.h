// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/job_step.h"
#include "read/log_event.h"
#include "read/string_table.h"
#include "report/latency_histogram.h"
#include "report/memory_state.h"
#include "report/process_table.h"

#include <array>
#include <cstdint>
#include <deque>
#include <iosfwd>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

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
    ProcessIdentity who;
    uint64_t count = 0;
    int64_t first_ts_ns = 0;
    int64_t last_ts_ns = 0;
    SampleRange rss_bytes;
    SampleRange fds;
};

// Delays from free to unpin, as the per-process and per-host lists give
// them.
struct DelayFigures {
    uint64_t count = 0; // unpins that carried a delay
    int64_t p50_ns = 0;
    int64_t p99_ns = 0;
    int64_t max_ns = 0;
};

// What the per-process and per-host lists give for a process or a host.
struct JobFigures {
    uint64_t events = 0;
    uint64_t pins = 0;   // successful ones
    uint64_t unpins = 0; // successful ones
    uint64_t errors = 0; // error events, verify findings among them
    uint64_t verify_findings = 0;
    uint64_t peak_pinned_bytes = 0;   // of a host: all its processes at one time
    uint64_t peak_live_gpu_bytes = 0; // likewise
    DelayFigures unpin_delay;
};

// One process of a job, for the per-rank breakdown.
struct ProcessSummary {
    ProcessIdentity who;
    JobFigures figures;
};

// One host of a job: its processes together.
struct HostSummary {
    UntrustedText host; // "" for processes whose log has no `process` line
    uint64_t processes = 0;
    JobFigures figures;
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

    std::array<Tally, tallied_kind_count> by_kind{};
    std::map<std::pair<UntrustedText, UntrustedText>, Tally> by_api; // (ev, api)
    std::map<UntrustedText, Tally> allocs_by_mem_kind;
    std::map<UntrustedText, Tally> pins_by_backend;
    // What pin-on-alloc left unpinned, and why (docs/log-format.md, `skip`).
    std::map<UntrustedText, uint64_t> skips_by_reason;

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
    // Pointer queries, from the processes' `queries` lines.
    uint64_t pointer_queries_answered = 0;
    uint64_t pointer_queries_forwarded = 0;
    std::map<UntrustedText, uint64_t> error_messages; // capped, see SummaryBuilder

    // By (file, pid); processes with samples only.
    std::map<std::pair<uint32_t, int64_t>, ProcessSamples> samples;

    // The job: what the `process` lines say, and every process and host.
    uint64_t process_lines = 0;
    std::map<UntrustedText, uint64_t> versions;       // gdrhook version -> processes
    std::map<UntrustedText, uint64_t> configurations; // GDRHOOK_* settings -> processes
    std::map<UntrustedText, uint64_t> commands;       // command line -> processes
    std::vector<ProcessSummary> by_process;           // by file, then pid
    std::vector<HostSummary> by_host;                 // by host name
};

// Builds the Summary from events, in two stages (JobStepConsumer): what an
// event does within its process (digest(), in its file's order), and what
// needs every process at one time: the peaks of a host and of the job, and
// the capped lists of messages and of `process` lines (take(), in the
// order of time across files). add() does both for one event, for a
// reader that hands out events in that order already.
class SummaryBuilder : public JobStepConsumer {
public:
    // Distinct error messages kept; further ones are counted as "(other)".
    static constexpr size_t max_error_messages = 64;
    // Distinct versions, configurations and command lines kept; likewise.
    static constexpr size_t max_distinct_processes = 16;

    void add(const LogEvent &event, const SourceLocation &where);
    JobStep digest(const LogEvent &event, const SourceLocation &where) override;
    void take(const JobStep &step, const LogEvent *detail, const SourceLocation &where) override;
    Summary finish(uint64_t files, uint64_t bytes_read, uint64_t malformed_lines);

private:
    struct PairHash {
        size_t operator()(const std::pair<std::string_view, std::string_view> &p) const
        {
            return std::hash<std::string_view>()(p.first) * 31 +
                   std::hash<std::string_view>()(p.second);
        }
    };
    // Running figures of one process: digest()'s, and take()'s apart, in
    // a few bytes a process, so that a step of any of a thousand processes
    // finds them in cache (ProcessTotals holds a histogram of 4 KiB).
    struct ProcessTotals {
        ProcessSummary summary; // but the peaks, which are take()'s
        CoarseLatencyHistogram delay;
    };
    struct ProcessBytes {
        size_t host = 0; // index into hosts_; digest() sets it first
        uint64_t pinned_bytes = 0;
        uint64_t live_gpu_bytes = 0;
        uint64_t peak_pinned_bytes = 0;
        uint64_t peak_live_gpu_bytes = 0;
    };
    struct HostTotals {
        HostSummary summary;
        uint64_t pinned_bytes = 0;
        uint64_t live_gpu_bytes = 0;
    };

    static void count(Tally &tally, const LogEvent &event);
    uint32_t process_for(const ProcessKey &key);
    size_t host_index(const std::string &host);
    void count_error_message(const LogEvent &event);
    void note_process_line(ProcessBytes &process, const LogEvent &event);
    void note_memory(ProcessBytes &process, const JobStep &step);

    Summary summary_;
    MemoryState memory_{false}; // bytes only: no pin details
    ProcessTable table_;
    std::unordered_map<ProcessKey, uint32_t, ProcessKeyHash> process_of_key_;
    // By JobStep::process; a deque keeps each in place as more come.
    std::deque<ProcessTotals> processes_;
    std::vector<ProcessBytes> process_bytes_;
    // As MemoryState's: the process of each file's last event.
    std::vector<std::pair<int64_t, uint32_t>> last_of_file_;
    std::vector<HostTotals> hosts_;
    std::unordered_map<std::string, size_t> host_of_name_;
    // Every process's bytes together, in take()'s order.
    uint64_t total_live_gpu_bytes_ = 0;
    uint64_t total_pinned_bytes_ = 0;
    // Keyed by views of our own copies of the names: no allocation per
    // event, and the keys outlive the reader. Turned into Summary's
    // sorted maps by finish().
    StringTable names_;
    std::unordered_map<std::pair<std::string_view, std::string_view>, Tally, PairHash> by_api_;
    std::unordered_map<std::string_view, Tally> allocs_by_mem_kind_;
    std::unordered_map<std::string_view, Tally> pins_by_backend_;
    std::unordered_map<std::string_view, uint64_t> skips_by_reason_;
};

// The human-readable report.
void print_summary(std::ostream &out, const Summary &summary);

// The same as one JSON object (stable keys, for scripts).
std::string summary_json(const Summary &summary);

} // namespace gdrhook::cli
