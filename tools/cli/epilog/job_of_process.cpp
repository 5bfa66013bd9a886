// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "epilog/job_of_process.h"

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

// The number after "/NAME_" in a cgroup path, where a path part starts so.
std::string part_number(const std::string &path, const char *name)
{
    const std::string key = std::string("/") + name + "_";
    for (size_t at = path.find(key); at != std::string::npos; at = path.find(key, at + 1)) {
        std::string number = digits_at(path, at + key.size());
        const size_t end = at + key.size() + number.size();
        if (!number.empty() && (end == path.size() || path[end] == '/'))
            return number;
    }
    return {};
}

} // namespace

JobOfProcess job_of_cgroup_line(const std::string &line)
{
    // "HIERARCHY:CONTROLLERS:PATH"; the path may hold ':' itself.
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos)
        return {};
    const std::string path = line.substr(second + 1);
    JobOfProcess found;
    found.job = part_number(path, "job");
    if (!found.job.empty()) {
        found.step = part_number(path, "step");
        if (found.step.empty() && path.find("/step_batch") != std::string::npos)
            found.step = "batch";
    }
    return found;
}

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
    if (found.job.empty())
        found.step.clear();
    return found;
}

JobOfProcess job_of_process(const std::string &proc_root, int pid)
{
    const std::string dir = proc_root + "/" + std::to_string(pid);
    std::string text;
    read_small_file((dir + "/cgroup").c_str(), text);
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        JobOfProcess found = job_of_cgroup_line(text.substr(start, end - start));
        if (!found.job.empty())
            return found;
        start = end + 1;
    }
    text.clear();
    read_small_file((dir + "/environ").c_str(), text, 1024 * 1024);
    return job_of_environment(text);
}

} // namespace gdrhook::cli
