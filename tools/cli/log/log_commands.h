// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "report/check.h"

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace gdrhook::cli {

// Threads `log summary` parses with by default, besides its own: one less
// than the CPUs this process may run on (sched_getaffinity), at most 8.
unsigned default_parse_threads();
// The most --threads takes.
inline constexpr unsigned max_parse_threads = 64;

struct LogOptions {
    std::vector<std::string> files;
    bool json = false; // summary: JSON instead of text
    // summary: threads that parse the files ahead of the one that digests
    // them (BatchedLogReader); 0: that one parses them too.
    unsigned threads = default_parse_threads();
    // summary: steps held for all files together, 0 for BatchedLogReader's
    // step_budget; a test makes it small so that few events fill a batch.
    size_t step_budget = 0;
    std::string output;             // timeline: the SVG to write
    int64_t min_ts_ns = INT64_MIN;  // ignore events before (gdrhook run)
    std::vector<std::string> allow; // check: --allow values, as given
    CheckOptions check;             // check: the problems they allow
};

// `gdrhook log summary`: exit_ok, or exit_input when a file could not be
// read or a line was malformed (the summary of the rest is still printed).
int log_summary(const LogOptions &options, std::ostream &out, std::ostream &err);

// `gdrhook log check`: exit_ok only when every rule holds; exit_findings
// when a rule is broken; exit_input when a file or line could not be read.
int log_check(const LogOptions &options, std::ostream &out, std::ostream &err);

// `gdrhook log timeline`: writes options.output.
int log_timeline(const LogOptions &options, std::ostream &out, std::ostream &err);

} // namespace gdrhook::cli
