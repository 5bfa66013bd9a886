// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook node`'s text report, for people (node_prometheus.cpp writes
// the textfile for the cluster's monitoring).
#include "node/node_command.h"
#include "report/units.h"
#include "terminal/terminal_text.h"

#include <pwd.h>

#include <ostream>

namespace gdrhook::cli {

std::string user_name(unsigned uid)
{
    const passwd *pw = getpwuid(uid);
    return pw ? pw->pw_name : std::to_string(uid);
}

const char *kind_name(PinHolding::Kind kind)
{
    return kind == PinHolding::Kind::gdrhook_file ? "gdrhook" : "dmabuf";
}

void print_node_text(const NodeView &view, std::ostream &out)
{
    const NodeSnapshot &s = view.shown;
    out << "gdrhook node: what is pinned on this machine";
    if (view.uid)
        out << ", for user " << user_name(*view.uid);
    if (!view.job.empty())
        out << ", for job " << view.job;
    out << "\n";
    if (s.module.loaded)
        out << "module: " << s.module.pins_live << " pins live, "
            << format_bytes(static_cast<double>(s.module.pinned_bytes)) << " pinned, "
            << s.module.files_open << " files open (all users)\n";
    else
        out << "module: not loaded (no /sys/class/misc/gdrhook/stats)\n";

    out << "by process:\n";
    if (s.holdings.empty())
        out << "  nothing\n";
    for (const PinHolding &h : s.holdings) {
        out << "  pid " << h.pid << " (" << terminal_text(h.comm) << ") user " << user_name(h.uid);
        if (!h.job.empty())
            out << " job " << h.job;
        out << " fd " << h.fd << ": " << kind_name(h.kind) << ", " << h.pins << " pins, "
            << format_bytes(static_cast<double>(h.bytes));
        if (h.kind == PinHolding::Kind::dmabuf)
            out << ", exporter " << terminal_text(h.exporter);
        else if (h.opener_pid != h.pid)
            out << ", opened by pid " << h.opener_pid << " of " << user_name(h.opener_uid);
        if (h.orphaned)
            out << "; its opener is gone: held only by this process";
        out << "\n";
    }
    out << "by user:\n";
    const auto owners = total_by_owner(s);
    if (owners.empty())
        out << "  nothing\n";
    for (const auto &[key, row] : owners) {
        out << "  " << user_name(key.uid);
        if (!key.job.empty())
            out << " job " << key.job;
        out << ": " << kind_name(key.kind) << ", " << row.pins << " pins, "
            << format_bytes(static_cast<double>(row.bytes));
        if (row.orphaned_pins)
            out << " (" << row.orphaned_pins << " pins of processes that are gone)";
        out << "\n";
    }
    if (view.totals.unattributed_pins) {
        out << "unattributed: " << view.totals.unattributed_pins << " module pins, "
            << format_bytes(static_cast<double>(view.totals.unattributed_bytes))
            << ", held by no process this user can read";
        if (!whole_node(view))
            out << " (whose they are cannot be told: not counted here)";
        out << "\n";
    }
    if (s.unreadable) {
        out << "unreadable: " << s.unreadable << " of " << s.processes
            << " processes (their fds are their owners' and root's to read";
        if (s.past_budget)
            out << "; " << s.past_budget << " not read past the fd budget, --fd-budget";
        out << ")\n";
    }
    if (!view.bar1_error.empty())
        out << "BAR1: not reported (" << view.bar1_error << ")\n";
    for (const NodeGpu &gpu : view.gpus) {
        out << "BAR1 gpu " << gpu.index << " (" << gpu.pci_bus_id << "): ";
        if (gpu.known)
            out << format_bytes(static_cast<double>(gpu.bar1_used)) << " used of "
                << format_bytes(static_cast<double>(gpu.bar1_total)) << "\n";
        else if (!gpu.error.empty())
            out << "not reported (" << gpu.error << ")\n";
        else
            out << "not reported\n";
    }
    switch (node_verdict(view)) {
    case NodeVerdict::pinned: out << "verdict: memory is still pinned\n"; break;
    case NodeVerdict::could_not_see:
        out << "verdict: could not see " << unseen_processes(view) << " of ";
        if (view.job.empty())
            out << s.processes << " processes";
        else
            out << "job " << view.job << "'s processes";
        out << ": what they hold is unknown (run as root)\n";
        break;
    case NodeVerdict::nothing_pinned: out << "verdict: nothing pinned\n"; break;
    }
}

} // namespace gdrhook::cli
