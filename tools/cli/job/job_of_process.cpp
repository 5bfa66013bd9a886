// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "job/job_of_process.h"

#include "job/slurm_ids.h"

#include "cache/base/safe_file.h"

#include <cstring>

namespace gdrhook::cli {
namespace {

// The decimal digits at TEXT[FROM...], or "" where there are none.
std::string digits_at(const std::string &text, size_t from)
{
    size_t end = from;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9')
        ++end;
    return text.substr(from, end - from);
}

} // namespace

JobOfProcess job_of_environment(const std::string &block)
{
    JobOfProcess found;
    size_t start = 0;
    while (start < block.size()) {
        size_t end = block.find('\0', start);
        if (end == std::string::npos)
            end = block.size();
        const std::string entry = block.substr(start, end - start);
        if (entry.rfind("SLURM_JOB_ID=", 0) == 0)
            found.job = digits_at(entry, std::strlen("SLURM_JOB_ID="));
        else if (entry.rfind("SLURM_STEP_ID=", 0) == 0)
            found.step = digits_at(entry, std::strlen("SLURM_STEP_ID="));
        start = end + 1;
    }
    if (!is_job_id(found.job))
        return {};
    return found;
}

bool in_job(const JobOfProcess &of, const std::string &job, const std::string &step)
{
    return !job.empty() && of.job == job && (step.empty() || of.step.empty() || of.step == step);
}

bool may_be_of_job(const JobOfProcess &of, unsigned uid, const std::string &job,
                   const std::string &step, std::optional<unsigned> job_user)
{
    return in_job(of, job, step) ||
           (of.job.empty() && !of.in_slurm_cgroup && job_user && *job_user == uid);
}

void ProcessJobs::name_user(const std::string &job, unsigned uid)
{
    named_[job] = uid;
}

void ProcessJobs::meet(int pid, unsigned uid)
{
    // A process gone while it was met has no cgroup, and no job by one.
    const std::string text =
        read_small_file((proc_root_ + "/" + std::to_string(pid) + "/cgroup").c_str()).value();
    Met &met = met_[pid];
    met.uid = uid;
    met.cgroup = slurm_cgroup_of(text);
    met.decided.reset();
    // Only root makes these cgroups and puts processes in them: v1 names
    // the job's user, v2's task cgroups hold the user's processes.
    if (met.cgroup.found && met.cgroup.task)
        shown_[met.cgroup.job].insert(met.cgroup.uid ? *met.cgroup.uid : uid);
}

std::optional<unsigned> ProcessJobs::user_of(const std::string &job) const
{
    if (const auto named = named_.find(job); named != named_.end())
        return named->second;
    const auto shown = shown_.find(job);
    if (shown == shown_.end() || shown->second.size() != 1)
        return std::nullopt; // none, or several (a task ran a setuid program)
    return *shown->second.begin();
}

std::map<std::string, unsigned> ProcessJobs::users() const
{
    std::map<std::string, unsigned> all = named_;
    for (const auto &[job, uids] : shown_)
        if (const auto user = user_of(job))
            all.emplace(job, *user);
    return all;
}

bool ProcessJobs::is_some_jobs_user(unsigned uid) const
{
    for (const auto &[job, user] : named_)
        if (user == uid)
            return true;
    for (const auto &[job, uids] : shown_)
        if (uids.size() == 1 && *uids.begin() == uid && !named_.count(job))
            return true;
    return false;
}

JobOfProcess ProcessJobs::job_of(int pid)
{
    const auto found = met_.find(pid);
    if (found == met_.end())
        return {};
    Met &met = found->second;
    if (met.decided)
        return *met.decided;
    JobOfProcess of;
    if (met.cgroup.found) {
        of.in_slurm_cgroup = true;
        const std::optional<unsigned> user = user_of(met.cgroup.job);
        const bool uid_matches =
            (!met.cgroup.uid || *met.cgroup.uid == met.uid) && (!user || *user == met.uid);
        if (uid_matches) {
            of.job = met.cgroup.job;
            of.step = met.cgroup.step;
        }
    } else if (is_some_jobs_user(met.uid)) {
        // Only then: another user's environment, however large, charges
        // no job, so it is not read.
        const std::string block =
            read_small_file((proc_root_ + "/" + std::to_string(pid) + "/environ").c_str(),
                            1024 * 1024)
                .value();
        const JobOfProcess claimed = job_of_environment(block);
        const std::optional<unsigned> user = user_of(claimed.job);
        if (!claimed.job.empty() && user && *user == met.uid)
            of = claimed;
    }
    met.decided = of;
    return of;
}

} // namespace gdrhook::cli
