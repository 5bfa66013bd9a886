// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook node`: what is pinned on the machine now, by process and by
// user, the module's node-wide counters, BAR1 where NVML reports it; an
// exit status a job scheduler's epilog can act on (README, "What is
// pinned on a node").
#include "node/node_command.h"
#include "exit_code.h"

#include "cache/base/safe_file.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <ostream>
#include <sstream>

namespace gdrhook::cli {
namespace {

std::optional<unsigned> parse_user(const std::string &user)
{
    if (const passwd *pw = getpwnam(user.c_str()))
        return pw->pw_uid;
    if (user.empty() || user.size() > 9 ||
        user.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt; // not a name, nor a uid this tool takes
    return static_cast<unsigned>(std::stoul(user));
}

// NVIDIA GPUs by PCI bus id, from sysfs: NVML is asked about each.
std::vector<std::string> nvidia_gpus(const std::string &sys_root)
{
    std::vector<std::string> ids;
    const std::string dir = sys_root + "/bus/pci/devices/";
    std::vector<std::string> names;
    list_directory(dir, names);
    for (const std::string &name : names) {
        std::string vendor, device_class;
        read_small_file((dir + name + "/vendor").c_str(), vendor, 64);
        read_small_file((dir + name + "/class").c_str(), device_class, 64);
        vendor.erase(vendor.find_last_not_of(" \n") + 1);
        // Display controllers (0x03xxxx) of vendor NVIDIA.
        if (vendor == "0x10de" && device_class.rfind("0x03", 0) == 0)
            ids.push_back(name);
    }
    return ids;
}

} // namespace

NodeView build_node_view(const NodeSnapshot &snapshot, std::optional<unsigned> uid)
{
    NodeView view;
    view.all = snapshot;
    view.uid = uid;
    view.shown = uid ? only_user(snapshot, *uid) : snapshot;
    view.totals = total_node(view.shown);
    // Whose the module's unaccounted pins are cannot be told: they come
    // from every file, not from the user's alone.
    const NodeTotals all = total_node(snapshot);
    view.totals.unattributed_pins = all.unattributed_pins;
    view.totals.unattributed_bytes = all.unattributed_bytes;
    return view;
}

bool node_has_pins(const NodeView &view)
{
    return view.totals.gdrhook.pins + view.totals.dmabuf.pins + view.totals.unattributed_pins > 0;
}

int run_node(const NodeOptions &options, std::ostream &out, std::ostream &err)
{
    std::optional<unsigned> uid;
    if (!options.user.empty() && !(uid = parse_user(options.user))) {
        err << "gdrhook node: no user '" << options.user << "'\n";
        return exit_input;
    }
    NodeView view = build_node_view(scan_node(options.proc_root, options.sys_root), uid);
    const std::vector<std::string> gpus = nvidia_gpus(options.sys_root);
    if (gpus.empty()) {
        view.bar1_error = "no NVIDIA GPU in " + options.sys_root + "/bus/pci/devices";
    } else {
        NvmlFacts nvml = probe_nvml(options.libnvml, gpus);
        if (!nvml.loaded)
            view.bar1_error = options.libnvml + ": " + nvml.error;
        view.bar1 = nvml.bar1;
    }
    print_node_text(view, out);
    if (!options.prometheus.empty()) {
        std::ostringstream text;
        print_node_prometheus(view, text);
        // Replaced whole: node-exporter may read it at any moment. Often
        // in a shared textfile-collector folder, where a link or another
        // user's file at the name is refused (safe_file.h).
        const std::string why = replace_by_rename(options.prometheus, text.str(), 0644);
        if (!why.empty()) {
            err << "gdrhook node: " << options.prometheus << " " << why << "\n";
            return exit_input;
        }
    }
    return node_has_pins(view) ? exit_findings : exit_ok;
}

} // namespace gdrhook::cli
