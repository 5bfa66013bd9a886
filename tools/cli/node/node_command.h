// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "doctor/doctor.h"
#include "node/node_scan.h"

#include <iosfwd>
#include <optional>
#include <string>

namespace gdrhook::cli {

struct NodeOptions {
    std::string proc_root = "/proc";
    std::string sys_root = "/sys";
    std::string user;       // a name or a uid: only what is charged to it
    std::string prometheus; // write a node-exporter textfile here too
    std::string libnvml = "libnvidia-ml.so.1";
};

// Everything `gdrhook node` reports, as one value: the report functions
// below and the tests read it.
struct NodeView {
    NodeSnapshot all;                  // every holding the caller can read
    NodeSnapshot shown;                // those of the user asked for (else all)
    std::optional<unsigned> uid;       // the user asked for
    NodeTotals totals;                 // of shown; unattributed from all
    std::vector<NvmlFacts::Bar1> bar1; // per NVIDIA GPU, where NVML answers
    std::string bar1_error;            // why BAR1 is not reported, if it is not
};

NodeView build_node_view(const NodeSnapshot &snapshot, std::optional<unsigned> uid);

// Whether anything is left pinned for the epilog: a holding shown, or
// module pins no visible file accounts for (whose they are cannot be told).
bool node_has_pins(const NodeView &view);

void print_node_text(const NodeView &view, std::ostream &out);
void print_node_prometheus(const NodeView &view, std::ostream &out);

// `gdrhook node`: exit_ok when nothing is pinned (of the user, with
// --user), exit_findings when something is, exit_input on a bad --user or
// an unwritable --prometheus file.
int run_node(const NodeOptions &options, std::ostream &out, std::ostream &err);

} // namespace gdrhook::cli
