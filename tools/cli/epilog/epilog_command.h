// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once
// `gdrhook epilog`: one job's verdict on this node, at its end (README,
// "Slurm"): the job's event logs of this host checked as `gdrhook log
// check` checks them, and what the job's processes still hold pinned as
// `gdrhook node --job` sees it, charged by job (job/job_of_process.h),
// never by user: a sibling job of the same user, module pins no process accounts
// for and processes of no job are shown, not held against the job.

#include "node/node_scan.h"

#include <cstdint>
#include <iosfwd>
#include <string>

namespace gdrhook::cli {

struct EpilogOptions {
    std::string job;     // the Slurm job id judged
    std::string step;    // only this step of it ("": the whole job)
    std::string uid;     // the job's user: another user's process is not the job's
    std::string events;  // the job's GDRHOOK_EVENTS pattern; this host's logs
    std::string summary; // the summary file to write (%h: this host)
    // The shim's load marks of the step on this host (GDRHOOK_LOAD_MARKS):
    // a step whose processes did not load the shim ran without gdrhook.
    std::string load_marks;
    std::string proc_root = "/proc";
    std::string sys_root = "/sys";
    uint64_t fd_budget = ScanOptions::default_fd_budget; // fds read in all, at most
};

// Prints the verdict line on OUT, writes the summary file: exit_ok when the
// job left nothing pinned here and its logs pass; exit_findings when it
// left pins, its logs have problems or some process could not be read;
// exit_input on bad arguments or an unwritable summary.
int run_epilog(const EpilogOptions &options, std::ostream &out, std::ostream &err);

} // namespace gdrhook::cli
