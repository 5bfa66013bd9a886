// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook node`'s node-exporter textfile (Prometheus exposition format):
// the whole node, whatever --user or --job the text report is for, so
// that the file an epilog writes holds every user's and job's series.
// Every family has a sample: one with no series gets a 0 without labels,
// so that sum() over it gives 0, not nothing. GPU series carry DCGM's
// labels (gpu, pci_bus_id, Hostname) so that they join dcgm-exporter's;
// a job is `hpc_job`, as dcgm-exporter's job mapping calls it (`job` is
// Prometheus's own, the scrape's).
#include "node/node_command.h"

#include <ostream>
#include <utility>
#include <vector>

namespace gdrhook::cli {
namespace {

// A label value, escaped as the exposition format asks.
std::string escaped(const std::string &value)
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

// {name="value",...} of the pairs whose value is not empty (an empty
// label is no label to Prometheus).
std::string labels(const std::vector<std::pair<const char *, std::string>> &pairs)
{
    std::string out;
    for (const auto &[name, value] : pairs)
        if (!value.empty())
            out += (out.empty() ? "{" : ",") + std::string(name) + "=\"" + escaped(value) + "\"";
    return out.empty() ? out : out + "}";
}

struct Sample {
    std::string labels;
    uint64_t value = 0;
};

void family(std::ostream &out, const char *name, const char *type, const char *help,
            const std::vector<Sample> &samples)
{
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << "\n";
    if (samples.empty())
        out << name << " 0\n";
    for (const Sample &sample : samples)
        out << name << sample.labels << ' ' << sample.value << "\n";
}

void gauge(std::ostream &out, const char *name, const char *help, uint64_t value)
{
    family(out, name, "gauge", help, {{"", value}});
}

void counter(std::ostream &out, const char *name, const char *help, uint64_t value)
{
    family(out, name, "counter", help, {{"", value}});
}

void print_owners(const NodeSnapshot &all, std::ostream &out)
{
    std::vector<Sample> pins, bytes, orphaned;
    for (const auto &[key, row] : total_by_owner(all)) {
        const std::string user = user_name(key.uid);
        const std::string with_kind =
            labels({{"user", user}, {"hpc_job", key.job}, {"kind", kind_name(key.kind)}});
        pins.push_back({with_kind, row.pins});
        bytes.push_back({with_kind, row.bytes});
        if (key.kind == PinHolding::Kind::gdrhook_file)
            orphaned.push_back({labels({{"user", user}, {"hpc_job", key.job}}), row.orphaned_pins});
    }
    family(out, "gdrhook_node_pinned_bytes", "gauge",
           "Bytes held pinned, by the user charged (gdrhook) or holding (dmabuf), the holder's "
           "Slurm job and kind, each file once.",
           bytes);
    family(out, "gdrhook_node_pins", "gauge",
           "Pins held, by user, Slurm job and kind (a dma-buf counts as one).", pins);
    family(out, "gdrhook_node_orphaned_pins", "gauge",
           "Module pins whose opener is gone, kept only by another holder of its file.", orphaned);
}

void print_module(const NodeView &node, std::ostream &out)
{
    const ModuleCounters &m = node.all.module;
    gauge(out, "gdrhook_node_unattributed_pins",
          "Module pins no file readable by this scrape accounts for.",
          node.totals.unattributed_pins);
    gauge(out, "gdrhook_node_unattributed_bytes",
          "Module pinned bytes no file readable by this scrape accounts for.",
          node.totals.unattributed_bytes);
    gauge(out, "gdrhook_node_module_loaded", "1 when gdrhook.ko is loaded.", m.loaded ? 1 : 0);
    gauge(out, "gdrhook_node_module_pins_live", "The module's live pins, all users.", m.pins_live);
    gauge(out, "gdrhook_node_module_pinned_bytes", "The module's pinned bytes, all users.",
          m.pinned_bytes);
    gauge(out, "gdrhook_node_module_files_open", "Open /dev/gdrhook files.", m.files_open);
    gauge(out, "gdrhook_node_module_files_live", "/dev/gdrhook files not yet freed.", m.files_live);
    counter(out, "gdrhook_node_module_pins_total", "Pins made since the module was loaded.",
            m.pins_total);
    counter(out, "gdrhook_node_module_callbacks_total",
            "NVIDIA free callbacks and dma-buf move_notify calls the module received.",
            m.callbacks);
    counter(out, "gdrhook_node_module_late_callbacks_total",
            "Callbacks that named a pin already gone.", m.late_callbacks);
    counter(out, "gdrhook_node_module_revocations_total",
            "Callbacks that revoked a live pin (its memory freed or moved under it).",
            m.revocations);
    counter(out, "gdrhook_node_module_events_dropped_total",
            "Revocation events lost because a file's queue was full.", m.events_dropped);
}

void print_gpus(const NodeView &view, std::ostream &out)
{
    std::vector<Sample> total, used;
    for (const NodeGpu &gpu : view.gpus) {
        if (!gpu.known)
            continue;
        const std::string dcgm = labels({{"gpu", std::to_string(gpu.index)},
                                         {"pci_bus_id", gpu.pci_bus_id},
                                         {"Hostname", view.hostname}});
        total.push_back({dcgm, gpu.bar1_total});
        used.push_back({dcgm, gpu.bar1_used});
    }
    family(out, "gdrhook_node_bar1_total_bytes", "gauge", "BAR1 size, as NVML reports it.", total);
    family(out, "gdrhook_node_bar1_used_bytes", "gauge", "BAR1 in use, as NVML reports it.", used);
}

} // namespace

void print_node_prometheus(const NodeView &view, std::ostream &out)
{
    const NodeView node = build_node_view(view.all, std::nullopt);
    print_owners(node.all, out);
    print_module(node, out);
    gauge(out, "gdrhook_node_processes", "Processes this scrape looked at.", node.all.processes);
    gauge(out, "gdrhook_node_unreadable_processes",
          "Processes whose fds this scrape could not read.", node.all.unreadable);
    print_gpus(view, out);
    const NodeVerdict verdict = node_verdict(node);
    gauge(out, "gdrhook_node_pinned",
          "1 when anything is left pinned on the node (gdrhook node's exit status 1).",
          verdict == NodeVerdict::pinned ? 1 : 0);
    gauge(out, "gdrhook_node_could_not_see",
          "1 when nothing was found pinned but some processes could not be read (exit status 3).",
          verdict == NodeVerdict::could_not_see ? 1 : 0);
}

} // namespace gdrhook::cli
