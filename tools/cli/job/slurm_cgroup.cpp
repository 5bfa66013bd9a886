// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "job/slurm_cgroup.h"

#include "job/slurm_ids.h"

#include <sstream>
#include <vector>

namespace gdrhook::cli {
namespace {

std::vector<std::string> split(const std::string &text, char by)
{
    std::vector<std::string> parts;
    std::string part;
    std::istringstream in(text);
    while (std::getline(in, part, by))
        parts.push_back(part);
    return parts;
}

// NAME_VALUE's VALUE where PART starts with NAME_, else "".
std::string after(const std::string &part, const std::string &name)
{
    const std::string prefix = name + "_";
    return part.rfind(prefix, 0) == 0 ? part.substr(prefix.size()) : "";
}

bool is_stepd_scope(const std::string &part)
{
    const std::string scope = "slurmstepd.scope";
    return part == scope ||
           (part.size() > scope.size() + 1 &&
            part.compare(part.size() - scope.size() - 1, std::string::npos, "_" + scope) == 0);
}

// The controllers of Slurm's cgroup v1 plugins (proctrack, task,
// jobacct_gather); a hierarchy of none of them is not Slurm's.
bool has_slurm_controller(const std::string &controllers)
{
    for (const std::string &c : split(controllers, ','))
        if (c == "freezer" || c == "cpuset" || c == "memory" || c == "devices" || c == "cpuacct")
            return true;
    return false;
}

// PARTS[AT...] = job_J[/step_S[/REST]]: what Slurm puts below its root.
SlurmCgroup job_and_step(const std::vector<std::string> &parts, size_t at)
{
    SlurmCgroup found;
    if (at >= parts.size() || !is_job_id(after(parts[at], "job")))
        return found;
    found.job = after(parts[at], "job");
    if (at + 1 < parts.size()) {
        found.step = after(parts[at + 1], "step");
        if (!is_step_id(found.step))
            return {};
    }
    found.task = at + 2 < parts.size() && parts[at + 2] == "user";
    found.found = true;
    return found;
}

} // namespace

SlurmCgroup slurm_cgroup_of_line(const std::string &line)
{
    // "HIERARCHY:CONTROLLERS:PATH"; the path may hold ':' itself.
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos)
        return {};
    const std::string hierarchy = line.substr(0, first);
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (path.empty() || path[0] != '/')
        return {};
    const std::vector<std::string> parts = split(path.substr(1), '/');
    if (hierarchy == "0" && controllers.empty()) {
        size_t at = !parts.empty() && parts[0] == "system.slice" ? 1 : 0;
        if (at >= parts.size() || !is_stepd_scope(parts[at]))
            return {};
        return job_and_step(parts, at + 1);
    }
    if (!has_slurm_controller(controllers) || parts.size() < 2 || parts[0] != "slurm" ||
        !is_job_id(after(parts[1], "uid")))
        return {};
    SlurmCgroup found = job_and_step(parts, 2);
    if (found.found) {
        found.uid = static_cast<unsigned>(std::stoul(after(parts[1], "uid")));
        found.task = true; // the job's user is in the path itself
    }
    return found;
}

SlurmCgroup slurm_cgroup_of(const std::string &text)
{
    for (const std::string &line : split(text, '\n')) {
        SlurmCgroup found = slurm_cgroup_of_line(line);
        if (found.found)
            return found;
    }
    return {};
}

} // namespace gdrhook::cli
