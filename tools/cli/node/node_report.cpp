// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook node`'s two outputs: text for people, and a node-exporter
// textfile (Prometheus exposition format) for the cluster's monitoring.
#include "node/node_command.h"
#include "report/terminal_text.h"
#include "report/units.h"

#include <pwd.h>

#include <map>
#include <ostream>

namespace gdrhook::cli {
namespace {

std::string user_name(unsigned uid)
{
    const passwd *pw = getpwuid(uid);
    return pw ? pw->pw_name : std::to_string(uid);
}

const char *kind_name(PinHolding::Kind kind)
{
    return kind == PinHolding::Kind::gdrhook_file ? "gdrhook" : "dmabuf";
}

// A label value, escaped as the exposition format asks.
std::string label(const std::string &value)
{
    std::string out;
    for (char c : value) {
        if (c == '\\' || c == '"')
            out += '\\';
        if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

} // namespace

void print_node_text(const NodeView &view, std::ostream &out)
{
    const NodeSnapshot &s = view.shown;
    out << "gdrhook node: what is pinned on this machine";
    if (view.uid)
        out << ", for user " << user_name(*view.uid);
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
        out << "  pid " << h.pid << " (" << terminal_text(h.comm) << ") user " << user_name(h.uid)
            << " fd " << h.fd << ": " << kind_name(h.kind) << ", " << h.pins << " pins, "
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
    const auto users = total_by_user(s);
    if (users.empty())
        out << "  nothing\n";
    for (const auto &[key, row] : users) {
        out << "  " << user_name(key.first) << ": " << kind_name(key.second) << ", " << row.pins
            << " pins, " << format_bytes(static_cast<double>(row.bytes));
        if (row.orphaned_pins)
            out << " (" << row.orphaned_pins << " pins of processes that are gone)";
        out << "\n";
    }
    if (view.totals.unattributed_pins)
        out << "unattributed: " << view.totals.unattributed_pins << " module pins, "
            << format_bytes(static_cast<double>(view.totals.unattributed_bytes))
            << ", held by no process this user can read\n";
    if (s.unreadable)
        out << "unreadable: " << s.unreadable << " of " << s.processes
            << " processes (their fds are their owners' and root's to read)\n";
    if (!view.bar1_error.empty())
        out << "BAR1: not reported (" << view.bar1_error << ")\n";
    for (const NvmlFacts::Bar1 &gpu : view.bar1) {
        out << "BAR1 " << gpu.pci_bus_id << ": ";
        if (gpu.known)
            out << format_bytes(static_cast<double>(gpu.used)) << " used of "
                << format_bytes(static_cast<double>(gpu.total)) << "\n";
        else
            out << "not reported (" << gpu.error << ")\n";
    }
    out << (node_has_pins(view) ? "verdict: memory is still pinned\n"
                                : "verdict: nothing pinned\n");
}

void print_node_prometheus(const NodeView &view, std::ostream &out)
{
    auto metric = [&](const char *name, const char *type, const char *help) {
        out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << "\n";
    };
    metric("gdrhook_node_pinned_bytes", "gauge",
           "Bytes held pinned, by the user charged (gdrhook) or holding (dmabuf), each file once.");
    const auto users = total_by_user(view.shown);
    for (const auto &[key, row] : users)
        out << "gdrhook_node_pinned_bytes{user=\"" << label(user_name(key.first)) << "\",kind=\""
            << kind_name(key.second) << "\"} " << row.bytes << "\n";
    metric("gdrhook_node_pins", "gauge", "Pins held, by user and kind (a dma-buf counts as one).");
    for (const auto &[key, row] : users)
        out << "gdrhook_node_pins{user=\"" << label(user_name(key.first)) << "\",kind=\""
            << kind_name(key.second) << "\"} " << row.pins << "\n";
    metric("gdrhook_node_orphaned_pins", "gauge",
           "Module pins whose opener is gone, kept only by another holder of its file.");
    for (const auto &[key, row] : users)
        if (key.second == PinHolding::Kind::gdrhook_file)
            out << "gdrhook_node_orphaned_pins{user=\"" << label(user_name(key.first)) << "\"} "
                << row.orphaned_pins << "\n";
    metric("gdrhook_node_unattributed_pins", "gauge",
           "Module pins no file readable by this scrape accounts for.");
    out << "gdrhook_node_unattributed_pins " << view.totals.unattributed_pins << "\n";
    metric("gdrhook_node_module_loaded", "gauge", "1 when gdrhook.ko is loaded.");
    out << "gdrhook_node_module_loaded " << (view.shown.module.loaded ? 1 : 0) << "\n";
    if (view.shown.module.loaded) {
        metric("gdrhook_node_module_pins_live", "gauge", "The module's live pins, all users.");
        out << "gdrhook_node_module_pins_live " << view.shown.module.pins_live << "\n";
        metric("gdrhook_node_module_pinned_bytes", "gauge",
               "The module's pinned bytes, all users.");
        out << "gdrhook_node_module_pinned_bytes " << view.shown.module.pinned_bytes << "\n";
    }
    metric("gdrhook_node_unreadable_processes", "gauge",
           "Processes whose fds this scrape could not read.");
    out << "gdrhook_node_unreadable_processes " << view.shown.unreadable << "\n";
    bool any_bar1 = false;
    for (const NvmlFacts::Bar1 &gpu : view.bar1) {
        if (!gpu.known)
            continue;
        if (!any_bar1)
            metric("gdrhook_node_bar1_used_bytes", "gauge", "BAR1 in use, as NVML reports it.");
        any_bar1 = true;
        out << "gdrhook_node_bar1_used_bytes{gpu=\"" << label(gpu.pci_bus_id) << "\"} " << gpu.used
            << "\n";
    }
    metric("gdrhook_node_pinned", "gauge",
           "1 when anything is left pinned (gdrhook node's exit status 1).");
    out << "gdrhook_node_pinned " << (node_has_pins(view) ? 1 : 0) << "\n";
}

} // namespace gdrhook::cli
