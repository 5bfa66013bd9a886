// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once
// Which Slurm job (and step) a process runs for: the one rule by which
// `gdrhook node` and `gdrhook epilog` charge a job with pins, so that a job
// is never charged with another's, and no user can charge one.
//
// 1. A process in a cgroup of Slurm's layout (slurm_cgroup.h) is that
//    job's, unless its uid is not the job's: under cgroup v1 the path's
//    uid_U must be the process's uid; and where the job's user is known,
//    a process of another uid (slurmstepd, a program run through sudo) is
//    charged to no job.
// 2. A process in no such cgroup (proctrack/linuxproc) is the job's that
//    SLURM_JOB_ID names in its environment only if its uid is that job's
//    user: anyone may set the variable, so it may hide a process of the
//    job, never charge another user's process to it.
// The job's user: the one Slurm names (`--uid`, `--user`), else the one
// its cgroups show (v1's uid_U, the uid of v2's task processes) where they
// show one; where none is known, the environment charges no process.

#include "job/slurm_cgroup.h"

#include <map>
#include <optional>
#include <set>
#include <string>

namespace gdrhook::cli {

struct JobOfProcess {
    std::string job;  // Slurm's job id; empty: no job's
    std::string step; // its step id; empty where not known
    // In a cgroup of Slurm's layout: its environment is never asked.
    bool in_slurm_cgroup = false;
};

// SLURM_JOB_ID and SLURM_STEP_ID in a NUL-separated environment block.
JobOfProcess job_of_environment(const std::string &block);

// Whether OF is job JOB's, of step STEP ("": any step; a process whose
// step is not known is of every step of its job).
bool in_job(const JobOfProcess &of, const std::string &job, const std::string &step);

// Whether a process whose fds were not read may hold job JOB's pins: it
// is the job's, or it is in no Slurm cgroup and of the job's user (its
// environment is the user's to change).
bool may_be_of_job(const JobOfProcess &of, unsigned uid, const std::string &job,
                   const std::string &step, std::optional<unsigned> job_user);

// The jobs of the processes of one /proc, by the rule above.
class ProcessJobs {
public:
    explicit ProcessJobs(std::string proc_root) : proc_root_(std::move(proc_root)) {}

    // JOB's user as Slurm names it: wins over what the cgroups show.
    void name_user(const std::string &job, unsigned uid);
    // Reads PID's cgroup; UID is its real uid. Every process is met before
    // any is asked about: a job's user comes from its processes' cgroups.
    void meet(int pid, unsigned uid);
    bool met(int pid) const { return met_.count(pid) != 0; }
    // JOB's user, where it is named or its cgroups show one.
    std::optional<unsigned> user_of(const std::string &job) const;
    // Every job's user known.
    std::map<std::string, unsigned> users() const;
    // PID's job by the rule (its environment read at most once, and only
    // where its cgroup is not Slurm's); no job for a process never met.
    JobOfProcess job_of(int pid);

private:
    bool is_some_jobs_user(unsigned uid) const;
    struct Met {
        unsigned uid = 0;
        SlurmCgroup cgroup;
        std::optional<JobOfProcess> decided;
    };
    std::string proc_root_;
    std::map<int, Met> met_;
    std::map<std::string, unsigned> named_;
    std::map<std::string, std::set<unsigned>> shown_;
};

} // namespace gdrhook::cli
