// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "report/check.h"
#include "report/units.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace gdrhook::cli {

namespace {

// Indexed by ProblemKind: what the report says, and the --allow name.
struct KindNames {
    const char *description;
    const char *allow;
};
constexpr KindNames kind_names[problem_kind_count] = {
    {"pin never unpinned", "never-unpinned"},
    {"free of pinned memory without unpin", "freed-while-pinned"},
    {"verify-mode finding", "verify-finding"},
    {"unpin or revoke of a handle that is not pinned", "double-release"},
    {"pin replaced while still pinned", "pin-replaced"},
    {"revoked pin never unpinned", "revoked-never-unpinned"},
    {"error event", "error"},
    {"events lost", "events-lost"},
    {"log capped", "log-capped"},
};

} // namespace

const char *describe(ProblemKind kind)
{
    return kind_names[static_cast<size_t>(kind)].description;
}

const char *allow_name(ProblemKind kind)
{
    return kind_names[static_cast<size_t>(kind)].allow;
}

namespace {
// `--allow error:TEXT`: the error events whose msg starts with TEXT.
const std::string error_prefix = "error:";
} // namespace

bool add_allowance(CheckOptions &options, const std::string &value)
{
    if (value.compare(0, error_prefix.size(), error_prefix) == 0 &&
        value.size() > error_prefix.size()) {
        options.allowed_error_prefixes.push_back(value.substr(error_prefix.size()));
        return true;
    }
    for (int k = 0; k < problem_kind_count; ++k) {
        if (value == allow_name(static_cast<ProblemKind>(k))) {
            options.allowed[static_cast<size_t>(k)] = true;
            return true;
        }
    }
    return false;
}

std::string allowance_words()
{
    std::string words = std::string(allow_name(ProblemKind::error_event)) +
                        " (any error event that is not a verify finding), " + error_prefix +
                        "TEXT (those whose msg starts with TEXT)";
    for (int k = 0; k < problem_kind_count; ++k)
        if (static_cast<ProblemKind>(k) != ProblemKind::error_event)
            words += std::string(", ") + allow_name(static_cast<ProblemKind>(k));
    return words;
}

namespace {

Problem from_pin(ProblemKind kind, const PinRecord &pin)
{
    Problem p{};
    p.kind = kind;
    p.pid = pin.pid;
    p.entry_id = pin.key;
    p.has_entry_id = pin.has_entry_id;
    p.addr = pin.addr;
    p.size = pin.size;
    p.api = std::string(pin.api);
    p.detail = std::string(pin.backend);
    p.pinned_at = pin.pinned_at;
    p.where = pin.pinned_at;
    p.has_free = pin.freed;
    p.freed_at = pin.freed_at;
    p.freed_by = std::string(pin.freed_by);
    p.has_failed_unpin = pin.unpin_failed;
    p.failed_unpin_at = pin.failed_unpin_at;
    p.failed_unpin_rc = pin.failed_unpin_rc;
    return p;
}

// A problem found at @p event itself.
Problem from_event(ProblemKind kind, const LogEvent &event, const SourceLocation &where)
{
    Problem p{};
    p.kind = kind;
    p.where = where;
    p.pid = event.pid;
    p.addr = event.addr;
    p.size = event.size;
    p.api = std::string(event.api);
    return p;
}

// Reported at the revoke: from there on, the unpin was due.
Problem from_revoked(const RevokedPin &revoked)
{
    Problem p = from_pin(ProblemKind::revoked_never_unpinned, revoked.pin);
    p.where = revoked.revoked_at;
    return p;
}

bool earlier(const SourceLocation &a, const SourceLocation &b)
{
    return a.file != b.file ? a.file < b.file : a.line < b.line;
}

} // namespace

bool Checker::allowed(const Problem &problem) const
{
    if (options_.allowed[static_cast<size_t>(problem.kind)])
        return true;
    if (problem.kind != ProblemKind::error_event)
        return false;
    for (const std::string &prefix : options_.allowed_error_prefixes)
        if (problem.detail.raw().compare(0, prefix.size(), prefix) == 0)
            return true;
    return false;
}

void Checker::keep(Problem problem)
{
    if (allowed(problem)) {
        ++result_.allowed_by_kind[static_cast<size_t>(problem.kind)];
        return;
    }
    ++result_.total_problems;
    ++result_.by_kind[static_cast<size_t>(problem.kind)];
    ProcessKey key{problem.where.file, problem.pid};
    ++problems_of_process_[key];
    problem.who = processes_.identity(key);
    if (result_.problems.size() < max_kept)
        result_.problems.push_back(std::move(problem));
}

void Checker::add(const LogEvent &event, const SourceLocation &where)
{
    ++result_.events;
    processes_.note(event, where);
    if (event.kind == EventKind::pin && event.rc == 0)
        ++result_.pins;
    if (event.kind == EventKind::error) {
        Problem p = from_event(is_verify_finding(event) ? ProblemKind::verify_finding
                                                        : ProblemKind::error_event,
                               event, where);
        p.detail = event.msg;
        p.rc = event.rc;
        keep(std::move(p));
    }

    Outcome outcome = memory_.apply(event, where);
    if (event.kind == EventKind::died) {
        ++result_.deaths;
        result_.released_by_death += outcome.released_by_death;
        if (event.lost) {
            Problem p = from_event(ProblemKind::events_lost, event, where);
            p.detail = std::to_string(event.lost);
            keep(std::move(p));
        }
    }
    if (event.kind == EventKind::capped) {
        // Incomplete: what happened past the cap is not in the log.
        Problem p = from_event(ProblemKind::log_capped, event, where);
        p.detail = std::to_string(event.not_written);
        p.size = event.max_bytes;
        keep(std::move(p));
    }
    if (outcome.revoked_not_unpinned)
        keep(from_revoked(*outcome.revoked_not_unpinned));
    if (outcome.displaced)
        keep(from_pin(ProblemKind::pin_replaced, *outcome.displaced));
    if (outcome.unmatched_release) {
        Problem p = from_event(ProblemKind::unmatched_release, event, where);
        p.entry_id = pin_key(event);
        p.has_entry_id = event.has_entry_id;
        p.detail = std::string(event.ev);
        keep(std::move(p));
    } else if ((event.kind == EventKind::unpin && event.rc == 0) ||
               event.kind == EventKind::revoke) {
        ++result_.releases;
    }
}

CheckResult Checker::finish()
{
    for (const RevokedPin *revoked : memory_.revoked_pins())
        keep(from_revoked(*revoked));
    for (const PinRecord *pin : memory_.open_pins()) {
        if (pin->freed) {
            Problem p = from_pin(ProblemKind::freed_while_pinned, *pin);
            p.where = pin->freed_at; // the free is where things went wrong
            keep(std::move(p));
        } else {
            keep(from_pin(ProblemKind::never_unpinned, *pin));
        }
    }
    std::stable_sort(result_.problems.begin(), result_.problems.end(),
                     [](const Problem &a, const Problem &b) { return earlier(a.where, b.where); });
    for (const auto &[key, count] : problems_of_process_)
        result_.by_process.emplace_back(processes_.identity(key), count);
    std::sort(result_.by_process.begin(), result_.by_process.end(),
              [](const auto &a, const auto &b) {
                  if (a.second != b.second)
                      return a.second > b.second;
                  return a.first.key.file != b.first.key.file ? a.first.key.file < b.first.key.file
                                                              : a.first.key.pid < b.first.key.pid;
              });
    return result_;
}

namespace {

// Processes named on the "problems by process" line.
constexpr size_t max_processes_listed = 20;

std::string at(const std::vector<std::string> &paths, const SourceLocation &where)
{
    return terminal_text(paths[where.file]) + ":" + std::to_string(where.line);
}

std::string range(const Problem &p)
{
    char text[48];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(p.addr));
    return std::string(text) + " + " + format_bytes(static_cast<double>(p.size));
}

std::string pin_name(const Problem &p)
{
    std::string name =
        p.has_entry_id ? "handle " + std::to_string(p.entry_id) : "pin at " + range(p);
    return name;
}

} // namespace

void print_check(std::ostream &out, const CheckResult &r, const std::vector<std::string> &paths,
                 uint64_t malformed_lines, uint64_t unreadable_inputs)
{
    for (const Problem &p : r.problems) {
        out << at(paths, p.where) << ": " << describe(p.kind) << ": " << describe(p.who) << ", ";
        switch (p.kind) {
        case ProblemKind::never_unpinned:
            out << pin_name(p) << ", " << range(p);
            if (!p.detail.empty())
                out << ", backend " << p.detail;
            out << "; no unpin or revoke follows before the log ends"
                   " (leaked, or the process was killed while holding it)";
            break;
        case ProblemKind::freed_while_pinned:
            out << p.freed_by << " at this line freed memory that " << pin_name(p) << " ("
                << range(p) << ", pinned at " << at(paths, p.pinned_at)
                << ") still held; no unpin or revoke followed";
            break;
        case ProblemKind::verify_finding:
            out << p.api << " " << range(p) << ": " << p.detail;
            break;
        case ProblemKind::unmatched_release:
            out << p.detail << " of " << pin_name(p)
                << ", which is not pinned (released twice, or pinned before this log begins)";
            break;
        case ProblemKind::revoked_never_unpinned:
            out << pin_name(p) << " (" << range(p) << ", pinned at " << at(paths, p.pinned_at)
                << ") was revoked here and no unpin of it follows";
            break;
        case ProblemKind::error_event:
            out << p.api << " " << range(p);
            if (p.rc)
                out << " (rc " << p.rc << ")";
            out << ": " << (p.detail.empty() ? "(no msg)" : p.detail);
            break;
        case ProblemKind::events_lost:
            out << p.detail
                << " event(s) lost: the process could not write its log and its journal "
                   "could not hold them";
            break;
        case ProblemKind::log_capped:
            out << p.detail << " event(s) not written: the log reached its cap of "
                << format_bytes(static_cast<double>(p.size))
                << " (GDRHOOK_LOG_MAX_BYTES); it is incomplete past that point";
            break;
        case ProblemKind::pin_replaced:
            out << pin_name(p) << " (" << range(p)
                << ") was pinned again before any unpin or revoke; this pin was never released";
            break;
        }
        if (p.has_failed_unpin)
            out << "; an unpin at " << at(paths, p.failed_unpin_at) << " failed (rc "
                << p.failed_unpin_rc << ")";
        out << '\n';
    }
    if (r.total_problems > r.problems.size())
        out << "... " << r.total_problems - r.problems.size() << " more problem(s) not shown\n";
    if (r.by_process.size() > 1) {
        out << "problems by process:";
        for (size_t i = 0; i < r.by_process.size() && i < max_processes_listed; ++i)
            out << (i ? ", " : " ") << short_label(r.by_process[i].first) << ' '
                << r.by_process[i].second;
        if (r.by_process.size() > max_processes_listed)
            out << ", and " << r.by_process.size() - max_processes_listed << " more process(es)";
        out << '\n';
    }

    // Allowed problems (--allow) are only counted: "; allowed: error 3".
    std::string allowed;
    for (int k = 0; k < problem_kind_count; ++k)
        if (uint64_t n = r.allowed_by_kind[static_cast<size_t>(k)])
            allowed += (allowed.empty() ? "; allowed: " : ", ") +
                       std::string(allow_name(static_cast<ProblemKind>(k))) + " " +
                       std::to_string(n);

    out << "gdrhook log check: ";
    if (r.passed() && malformed_lines == 0 && unreadable_inputs == 0) {
        out << "OK: " << r.events << " event(s), " << r.pins << " pin(s), every one unpinned";
        // A recovered log: what a dead process held, its death released.
        if (r.deaths)
            out << " or released by its process's death (" << r.deaths
                << " process(es) ended without writing their logs and were recovered; "
                << r.released_by_death << " pin(s) released by death)";
        out << ", no verify-mode findings, no error events" << allowed << '\n';
        return;
    }
    out << "FAILED: " << r.total_problems << " problem(s) in " << r.events << " event(s)";
    std::string sep = " (";
    for (int k = 0; k < problem_kind_count; ++k) {
        if (uint64_t n = r.by_kind[static_cast<size_t>(k)]) {
            out << sep << describe(static_cast<ProblemKind>(k)) << ": " << n;
            sep = ", ";
        }
    }
    if (sep == ", ")
        out << ')';
    out << allowed;
    if (r.incomplete_logs)
        out << "; " << r.incomplete_logs << " incomplete log(s): events were lost";
    if (malformed_lines)
        out << "; " << malformed_lines << " malformed line(s) could not be checked";
    if (unreadable_inputs)
        out << "; " << unreadable_inputs << " input(s) could not be read or recovered";
    out << '\n';
}

} // namespace gdrhook::cli
