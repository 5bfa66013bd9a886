// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "epilog/load_marks.h"

#include "terminal/terminal_text.h"

#include "cache/base/safe_file.h"

#include <set>
#include <sstream>
#include <string_view>

namespace gdrhook::cli {
namespace {

// Programs that start others in a mount namespace of their own, where the
// shim is found only if it was bound in: container runtimes (Apptainer's
// and Singularity's starters, podman and its runtimes, enroot's helpers,
// Charliecloud, Shifter, bubblewrap) and util-linux's own.
constexpr std::string_view runtimes[] = {
    "apptainer", "singularity", "starter", "starter-suid",   "podman",
    "conmon",    "crun",        "runc",    "enroot-nsenter", "enroot-switchroot",
    "ch-run",    "shifter",     "bwrap",   "unshare",        "nsenter",
};

bool is_runtime(std::string_view program)
{
    for (std::string_view name : runtimes)
        if (program == name)
            return true;
    return false;
}

} // namespace

std::string ran_without_gdrhook(const std::string &path, bool no_logs)
{
    // No marks file reads as no marks.
    const std::string text = read_small_file(path.c_str(), 128 * 1024).value();
    std::set<std::string> namespaces, runtimes_seen;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        const size_t space = line.find(' ');
        if (space == std::string::npos)
            continue;
        namespaces.insert(line.substr(0, space));
        if (const std::string program = line.substr(space + 1); is_runtime(program))
            runtimes_seen.insert(program);
    }
    if (namespaces.empty())
        return "no process of the step loaded the shim, or none could write its mark beside "
               "the logs (a container without them: README, \"Containers\")";
    if (!no_logs || namespaces.size() != 1 || runtimes_seen.empty())
        return "";
    std::ostringstream why;
    why << "only ";
    for (const std::string &program : runtimes_seen)
        why << UntrustedText(program) << (program == *runtimes_seen.rbegin() ? "" : ", ");
    why << ", a container runtime, loaded the shim; nothing it started in a mount namespace of "
           "its own did (the shim not bound into the container: README, \"Containers\")";
    return why.str();
}

} // namespace gdrhook::cli
