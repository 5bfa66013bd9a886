// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once
// `gdrhook epilog`: one job's verdict on this node, at its end (README,
// "Slurm"): the job's event logs of this host checked as `gdrhook log
// check` checks them, and what the job's processes still hold pinned as
// `gdrhook node` sees it, charged by job (job_of_process.h), never by
// user: a sibling job of the same user, module pins no process accounts
// for and processes of no job are shown, not held against the job.

#include "epilog/job_of_process.h"
#include "node/node_scan.h"

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace gdrhook::cli {

struct EpilogOptions {
    std::string job;     // the Slurm job id judged
    std::string step;    // only this step of it ("": the whole job)
    std::string uid;     // the job's user: another user's process is not the job's
    std::string events;  // the job's GDRHOOK_EVENTS pattern; this host's logs
    std::string summary; // the summary file to write (%h: this host)
    std::string proc_root = "/proc";
    std::string sys_root = "/sys";
};

// What of a node snapshot is the job's: holdings of its processes, and
// module files its live processes opened that others hold now.
struct JobPins {
    std::vector<PinHolding> job;    // charged to the job
    uint64_t other_jobs_pins = 0;   // held by other jobs' processes
    uint64_t no_job_pins = 0;       // held by processes of no job
    uint64_t unattributed_pins = 0; // module pins no readable process holds
    // Processes whose files could not be read and that may be the job's:
    // of the job, or of no job /proc tells and of its user (any user when
    // the user is not known).
    int unreadable = 0;
};
JobPins pins_of_job(const NodeSnapshot &snapshot, const std::string &proc_root,
                    const std::string &job, const std::string &step, std::optional<unsigned> uid);

// Prints the verdict line on OUT, writes the summary file: exit_ok when the
// job left nothing pinned here and its logs pass; exit_findings when it
// left pins, its logs have problems or some process could not be read;
// exit_input on bad arguments or an unwritable summary.
int run_epilog(const EpilogOptions &options, std::ostream &out, std::ostream &err);

} // namespace gdrhook::cli
