// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "doctor/machine_facts.h"
#include "node/node_scan.h"

#include <iosfwd>
#include <optional>
#include <string>

namespace gdrhook::cli {

struct NodeOptions {
    std::string proc_root = "/proc";
    std::string sys_root = "/sys";
    // A name or a uid: only what is charged to it; with JOB, the job's user
    // (job/job_of_process.h: whose processes its environment may charge).
    std::string user;
    std::string job; // a Slurm job id: only what is its (pins_of_job)
    // Write a node-exporter textfile here too; "-": to stdout, instead of
    // the text report.
    std::string prometheus;
    std::string libnvml = "libnvidia-ml.so.1";
    // How long to wait before reading the node again while module pins look
    // unattributed (node_command.cpp, scan_settled).
    int settle_ms = 100;
    uint64_t fd_budget = ScanOptions::default_fd_budget; // fds read in all, at most
};

// An NVIDIA GPU as DCGM names it, and its BAR1 where NVML reports it.
struct NodeGpu {
    int index = 0;          // DCGM's (and NVML's) number: PCI bus order
    std::string pci_bus_id; // as DCGM writes it: 00000000:3B:00.0
    bool known = false;     // NVML answered for BAR1
    std::string error;      // why not, if not
    uint64_t bar1_total = 0;
    uint64_t bar1_used = 0;
};

// Everything `gdrhook node` reports, as one value: the report functions
// below and the tests read it.
struct NodeView {
    NodeSnapshot all;            // every holding the caller can read
    NodeSnapshot shown;          // those of the user or job asked for (else all)
    int job_unseen = 0;          // with a job: its processes not read (pins_of_job)
    std::optional<unsigned> uid; // the user asked for
    std::string job;             // the job asked for
    NodeTotals totals;           // of shown; unattributed from all
    std::vector<NodeGpu> gpus;   // NVIDIA GPUs, in DCGM's order
    std::string bar1_error;      // why BAR1 is not reported, if it is not
    std::string hostname;        // DCGM's Hostname label
};

NodeView build_node_view(const NodeSnapshot &snapshot, std::optional<unsigned> uid,
                         const std::string &job = "");

// Whether the view asks about the whole node (no --user, no --job).
bool whole_node(const NodeView &view);

// Whether anything is left pinned for the epilog: a holding shown, or,
// for the whole node, module pins no visible file accounts for (whose
// they are cannot be told, so they count against no one user or job).
bool node_has_pins(const NodeView &view);

// The processes the verdict needed and could not read: every unreadable
// one, or with --job, those that may be the job's (pins_of_job, as the
// epilog counts them). With --user, every one: any process may hold a file
// the user opened.
int unseen_processes(const NodeView &view);

// What `gdrhook node` concludes: pinned wins; else, where processes
// could not be read, it cannot say that nothing is pinned.
enum class NodeVerdict { nothing_pinned, pinned, could_not_see };
NodeVerdict node_verdict(const NodeView &view);

// A user's name, or the uid where it has none; "gdrhook" or "dmabuf".
std::string user_name(unsigned uid);
const char *kind_name(PinHolding::Kind kind);

void print_node_text(const NodeView &view, std::ostream &out);
// Node-wide, whatever the view shows (node_prometheus.cpp).
void print_node_prometheus(const NodeView &view, std::ostream &out);

// `gdrhook node`: exit_ok when nothing is pinned (of the user, with
// --user; of the job, with --job), exit_findings when something is,
// exit_unseen when it could not read every process and found nothing,
// exit_input on a bad --user or an unwritable --prometheus file.
int run_node(const NodeOptions &options, std::ostream &out, std::ostream &err);

} // namespace gdrhook::cli
