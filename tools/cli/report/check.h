// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "terminal/terminal_text.h"

#include "read/log_event.h"
#include "report/memory_state.h"
#include "report/process_table.h"

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gdrhook::cli {

// The rules `log check` enforces, per process:
//  - a pin with handle H is followed by exactly one unpin or revoke of H;
//    a revoke must itself be followed by the unpin that frees the handle
//    (the kernel module's protocol, not a second release);
//  - a successful free (or context teardown) that overlaps a pinned range
//    is followed by that pin's unpin or revoke;
//  - verify mode found nothing (no "error" whose msg starts with
//    "verify" or "stale");
//  - there is no other "error" event either (a failed pin, export or
//    unpin), unless the user allows it (CheckOptions).
enum class ProblemKind : uint8_t {
    never_unpinned,     // held when the log ends: leaked, or the process was killed
    freed_while_pinned, // its memory was freed and no unpin followed
    verify_finding,
    unmatched_release,      // unpin/revoke of a handle not held (double release)
    pin_replaced,           // the same handle pinned again while still held
    revoked_never_unpinned, // revoked, and the unpin that frees the handle never came
    error_event,            // an "error" event that is not a verify finding
    events_lost,            // a `died` line counts events neither logged nor kept
    log_capped,             // a `capped` line: the byte cap kept events out of the log
};
inline constexpr int problem_kind_count = 9;
const char *describe(ProblemKind kind);

// The name `log check --allow` takes for a kind: "never-unpinned",
// "freed-while-pinned", "verify-finding", "double-release", "pin-replaced",
// "revoked-never-unpinned", "error", "events-lost", "log-capped".
const char *allow_name(ProblemKind kind);

// Problems the user expects, which are counted but do not fail the check.
struct CheckOptions {
    std::array<bool, problem_kind_count> allowed{};
    // Error events whose msg starts with one of these are allowed too.
    std::vector<std::string> allowed_error_prefixes;
};

// Adds one `--allow` value to @p options: a name from allow_name(), or
// "error:TEXT" for the error events whose msg starts with TEXT. Returns
// false for anything else.
bool add_allowance(CheckOptions &options, const std::string &value);

// Every value add_allowance() takes, in words, for `log check --help`:
// "error (...), error:TEXT (...), never-unpinned, freed-while-pinned, ...".
std::string allowance_words();

struct Problem {
    ProblemKind kind;
    SourceLocation where; // the line the problem is reported at
    int64_t pid = 0;
    ProcessIdentity who;   // its host and rank, where the log says
    uint64_t entry_id = 0; // the pin's key
    bool has_entry_id = false;
    uint64_t addr = 0;
    uint64_t size = 0;
    UntrustedText api;    // of the pin, the free or the error
    UntrustedText detail; // backend of the pin; msg of a finding or an error
    int64_t rc = 0;       // of an error event
    SourceLocation pinned_at;
    bool has_free = false; // freed_while_pinned, and never_unpinned if freed
    SourceLocation freed_at;
    UntrustedText freed_by;
    bool has_failed_unpin = false;
    SourceLocation failed_unpin_at;
    int64_t failed_unpin_rc = 0;
};

struct CheckResult {
    uint64_t events = 0;
    uint64_t pins = 0;
    uint64_t releases = 0;          // unpins and revokes that closed a pin
    uint64_t released_by_death = 0; // pins held by processes that died (recovered logs)
    uint64_t deaths = 0;            // `died` lines: processes whose logs were recovered
    uint64_t total_problems = 0;    // all of them, also those not kept; not the allowed
    std::array<uint64_t, problem_kind_count> by_kind{};
    std::array<uint64_t, problem_kind_count> allowed_by_kind{}; // counted only
    std::vector<Problem> problems; // sorted by file and line, at most max_kept
    // Problems per process that has any, most first (allowed ones not).
    std::vector<std::pair<ProcessIdentity, uint64_t>> by_process;
    // Logs cut inside their last line with nothing that says what was
    // lost (log_commands.cpp): the check cannot pass on what it never saw.
    uint64_t incomplete_logs = 0;
    bool passed() const { return total_problems == 0 && incomplete_logs == 0; }
};

class Checker {
public:
    explicit Checker(CheckOptions options = {}) : options_(std::move(options)) {}

    // Problems kept for printing; the rest are only counted, so a broken
    // log of millions of lines cannot exhaust memory.
    static constexpr size_t max_kept = 10000;

    void add(const LogEvent &event, const SourceLocation &where);
    CheckResult finish();

private:
    void keep(Problem problem);
    bool allowed(const Problem &problem) const;

    CheckOptions options_;
    CheckResult result_;
    MemoryState memory_;
    ProcessTable processes_;
    std::unordered_map<ProcessKey, uint64_t, ProcessKeyHash> problems_of_process_;
};

// One line per problem, "FILE:LINE: what: details", then a verdict line:
// "OK" only when nothing was wrong with the input either (a file that could
// not be read, a journal that could not be recovered: `unreadable_inputs`).
void print_check(std::ostream &out, const CheckResult &result,
                 const std::vector<std::string> &paths, uint64_t malformed_lines,
                 uint64_t unreadable_inputs = 0);

} // namespace gdrhook::cli
