// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook node`: what is pinned on the machine now, by process, user and
// job, the module's node-wide counters, BAR1 where NVML reports it; an
// exit status a job scheduler's epilog can act on (README, "What is
// pinned on a node").
#include "node/node_command.h"
#include "command/exit_code.h"
#include "job/slurm_ids.h"
#include "node/node_gpus.h"

#include "cache/base/safe_file.h"

#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <ostream>
#include <sstream>
#include <thread>

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

// The node read until its module pins no longer look unattributed, or
// three times. The module drops a pin from its file (what fdinfo shows)
// before it drops its node-wide counter, once the driver or exporter has
// let the memory go (kmod/pin_table.c, gdrhook_pin_destroy), which takes
// a while: an unpin a scan crossed can still show as a pin no file
// accounts for after the counters are read again. Pins that stay
// unattributed over three reads SETTLE_MS apart are held by what the
// caller cannot see (or by nothing), not in flight. Of the reads, the
// latest with the fewest such pins is kept.
NodeSnapshot scan_settled(const NodeOptions &options, std::optional<unsigned> uid)
{
    ScanOptions scan;
    scan.fd_budget = options.fd_budget;
    scan.job = options.job;
    scan.job_user = uid;
    NodeSnapshot best = scan_node(options.proc_root, options.sys_root, scan);
    for (int read = 1; read < 3 && total_node(best).unattributed_pins > 0; read++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(options.settle_ms));
        NodeSnapshot again = scan_node(options.proc_root, options.sys_root, scan);
        if (total_node(again).unattributed_pins <= total_node(best).unattributed_pins)
            best = std::move(again);
    }
    return best;
}

std::string host_name()
{
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0)
        return "";
    return name;
}

} // namespace

NodeView build_node_view(const NodeSnapshot &snapshot, std::optional<unsigned> uid,
                         const std::string &job)
{
    NodeView view;
    view.all = snapshot;
    view.uid = uid;
    view.job = job;
    view.shown = uid ? only_user(snapshot, *uid) : snapshot;
    if (!job.empty()) {
        // The job's, as its epilog charges it; a uid named with it is the
        // job's user, which the scan was told.
        const JobPins pins = pins_of_job(snapshot, job);
        view.shown.holdings = pins.job;
        view.job_unseen = pins.unreadable;
    }
    view.totals = total_node(view.shown);
    // Whose the module's unaccounted pins are cannot be told: they come
    // from every file, not from the user's alone.
    const NodeTotals all = total_node(snapshot);
    view.totals.unattributed_pins = all.unattributed_pins;
    view.totals.unattributed_bytes = all.unattributed_bytes;
    return view;
}

bool whole_node(const NodeView &view)
{
    return !view.uid && view.job.empty();
}

bool node_has_pins(const NodeView &view)
{
    const uint64_t unattributed = whole_node(view) ? view.totals.unattributed_pins : 0;
    return view.totals.gdrhook.pins + view.totals.dmabuf.pins + unattributed > 0;
}

int unseen_processes(const NodeView &view)
{
    if (view.job.empty())
        return view.all.unreadable;
    return view.job_unseen;
}

NodeVerdict node_verdict(const NodeView &view)
{
    if (node_has_pins(view))
        return NodeVerdict::pinned;
    return unseen_processes(view) > 0 ? NodeVerdict::could_not_see : NodeVerdict::nothing_pinned;
}

int run_node(const NodeOptions &options, std::ostream &out, std::ostream &err)
{
    std::optional<unsigned> uid;
    if (!options.user.empty() && !(uid = parse_user(options.user))) {
        err << "gdrhook node: no user '" << options.user << "'\n";
        return exit_input;
    }
    if (!options.job.empty() && !is_job_id(options.job)) {
        err << "gdrhook node: '" << options.job << "' is not a Slurm job id\n";
        return exit_input;
    }
    NodeView view = build_node_view(scan_settled(options, uid), uid, options.job);
    view.gpus = read_node_gpus(options.sys_root, options.libnvml, view.bar1_error);
    view.hostname = host_name();
    const bool to_stdout = options.prometheus == "-";
    if (!to_stdout)
        print_node_text(view, out);
    if (!options.prometheus.empty()) {
        std::ostringstream text;
        print_node_prometheus(view, text);
        if (to_stdout) {
            out << text.str();
        } else {
            // Replaced whole: node-exporter may read it at any moment.
            // Often in a shared textfile-collector folder, where a link or
            // another user's file at the name is refused (safe_file.h).
            const Result<void> written = replace_by_rename(options.prometheus, text.str(), 0644);
            if (!written) {
                err << "gdrhook node: " << options.prometheus << " " << written.why() << "\n";
                return exit_input;
            }
        }
    }
    switch (node_verdict(view)) {
    case NodeVerdict::pinned: return exit_findings;
    case NodeVerdict::could_not_see: return exit_unseen;
    case NodeVerdict::nothing_pinned: break;
    }
    return exit_ok;
}

} // namespace gdrhook::cli
