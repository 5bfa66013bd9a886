// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once
// Which Slurm job (and step) a process runs for, as /proc shows it: what
// `gdrhook epilog` judges a job by, so that a job is never charged with
// the pins of another job, even one of the same user (issue 41).

#include <string>

namespace gdrhook::cli {

struct JobOfProcess {
    std::string job;  // Slurm's job id; empty: no job's (or unreadable)
    std::string step; // its step id; empty where not known
};

// From PROC_ROOT/PID/cgroup first: under proctrack/cgroup or task/cgroup
// Slurm puts each step's processes in a cgroup .../job_N/step_S/..., which
// a process cannot leave. Else from PROC_ROOT/PID/environ: SLURM_JOB_ID and
// SLURM_STEP_ID as slurmstepd sets them for the tasks (and their children
// inherit); a process may change its own, so with proctrack/linuxproc a
// job can hide its leftovers this way, never charge another job with them.
JobOfProcess job_of_process(const std::string &proc_root, int pid);

// The job and step in one line of /proc/PID/cgroup ("" where none).
JobOfProcess job_of_cgroup_line(const std::string &line);

// SLURM_JOB_ID and SLURM_STEP_ID in a NUL-separated environment block.
JobOfProcess job_of_environment(const std::string &block);

} // namespace gdrhook::cli
