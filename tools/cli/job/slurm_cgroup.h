// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once
// Where Slurm puts a job's processes, read from /proc/PID/cgroup, and only
// where Slurm itself writes it: a path anchored at the hierarchy's root,
// in cgroups only root may make. A `job_N` anywhere else (a systemd
// user@UID.service subtree, which its user may shape at will) is no job.
//
//   cgroup v2 (one line, "0::PATH"):
//     /system.slice/slurmstepd.scope/job_J/step_S/user/task_N
//     /slurmstepd.scope/job_J/...      (slurmd not under systemd)
//     /system.slice/NODE_slurmstepd.scope/job_J/...  (several slurmd per host)
//     step_S/slurm holds slurmstepd itself (root), step_S/user the tasks.
//   cgroup v1 (a line per hierarchy of freezer, cpuset, memory, devices or
//   cpuacct, the controllers Slurm's plugins use):
//     /slurm/uid_U/job_J/step_S/task_N

#include <optional>
#include <string>

namespace gdrhook::cli {

struct SlurmCgroup {
    bool found = false; // a path of Slurm's layout
    std::string job;
    std::string step;            // "" where the path stops at the job
    std::optional<unsigned> uid; // cgroup v1: uid_U, the job's user
    bool task = false;           // a task's cgroup, the job user's (v2: step_S/user)
};

// The Slurm cgroup in one line of /proc/PID/cgroup (found false if none).
SlurmCgroup slurm_cgroup_of_line(const std::string &line);

// The first line of a /proc/PID/cgroup text in Slurm's layout.
SlurmCgroup slurm_cgroup_of(const std::string &text);

} // namespace gdrhook::cli
