// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "check.h"
#include "units.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace gdrhook::cli {

const char *describe(ProblemKind kind)
{
    switch (kind) {
    case ProblemKind::never_unpinned: return "pin never unpinned";
    case ProblemKind::freed_while_pinned: return "free of pinned memory without unpin";
    case ProblemKind::verify_finding: return "verify-mode finding";
    case ProblemKind::unmatched_release: return "unpin or revoke of a handle that is not pinned";
    case ProblemKind::pin_replaced: return "pin replaced while still pinned";
    }
    return "problem";
}

namespace {

Problem from_pin(ProblemKind kind, const PinRecord &pin)
{
    Problem p{};
    p.kind = kind;
    p.pid = pin.pid;
    p.handle = pin.key;
    p.has_handle = pin.has_handle;
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

bool earlier(const SourceLocation &a, const SourceLocation &b)
{
    return a.file != b.file ? a.file < b.file : a.line < b.line;
}

} // namespace

void Checker::keep(Problem problem)
{
    ++result_.total_problems;
    ++result_.by_kind[static_cast<size_t>(problem.kind)];
    if (result_.problems.size() < max_kept)
        result_.problems.push_back(std::move(problem));
}

void Checker::add(const LogEvent &event, const SourceLocation &where)
{
    ++result_.events;
    if (event.kind == EventKind::pin && event.rc == 0)
        ++result_.pins;
    if (event.kind == EventKind::error) {
        if (is_verify_finding(event)) {
            Problem p{};
            p.kind = ProblemKind::verify_finding;
            p.where = where;
            p.pid = event.pid;
            p.addr = event.addr;
            p.size = event.size;
            p.api = std::string(event.api);
            p.detail = event.msg;
            keep(std::move(p));
        } else {
            ++result_.other_errors;
        }
    }

    Outcome outcome = memory_.apply(event, where);
    if (outcome.displaced)
        keep(from_pin(ProblemKind::pin_replaced, *outcome.displaced));
    if (outcome.unmatched_release) {
        Problem p{};
        p.kind = ProblemKind::unmatched_release;
        p.where = where;
        p.pid = event.pid;
        p.handle = pin_key(event);
        p.has_handle = event.has_handle;
        p.addr = event.addr;
        p.size = event.size;
        p.api = std::string(event.api);
        p.detail = std::string(event.ev);
        keep(std::move(p));
    } else if ((event.kind == EventKind::unpin && event.rc == 0) ||
               event.kind == EventKind::revoke) {
        ++result_.releases;
    }
}

CheckResult Checker::finish()
{
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
    return result_;
}

namespace {

std::string at(const std::vector<std::string> &paths, const SourceLocation &where)
{
    return paths[where.file] + ":" + std::to_string(where.line);
}

std::string range(const Problem &p)
{
    char text[48];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(p.addr));
    return std::string(text) + " + " + format_bytes(static_cast<double>(p.size));
}

std::string pin_name(const Problem &p)
{
    std::string name = p.has_handle ? "handle " + std::to_string(p.handle) : "pin at " + range(p);
    return name;
}

} // namespace

void print_check(std::ostream &out, const CheckResult &r, const std::vector<std::string> &paths,
                 uint64_t malformed_lines)
{
    for (const Problem &p : r.problems) {
        out << at(paths, p.where) << ": " << describe(p.kind) << ": pid " << p.pid << ", ";
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

    out << "gdrhook log check: ";
    if (r.passed() && malformed_lines == 0) {
        out << "OK: " << r.events << " event(s), " << r.pins
            << " pin(s), every one unpinned or revoked, no verify-mode findings";
        if (r.other_errors)
            out << " (" << r.other_errors << " other error event(s): see gdrhook log summary)";
        out << '\n';
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
    if (malformed_lines)
        out << "; " << malformed_lines << " malformed line(s) could not be checked";
    out << '\n';
}

} // namespace gdrhook::cli
