// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook doctor --pid PID`: what a running process has loaded, read from
// /proc, and whether gdrhook or UCX's own CUDA hooks tell UCX's caches of
// frees (README, "Using gdrhook with UCX").
#include "doctor/doctor.h"
#include "terminal/terminal_text.h"

#include "cache/base/safe_file.h"
#include "cache/base/unknown_variables.h"

#include <map>
#include <sstream>

namespace gdrhook::cli {
namespace {

bool file_named(const std::string &path, const std::string &stem)
{
    const std::string base = path.substr(path.rfind('/') + 1);
    return base.rfind(stem, 0) == 0;
}

} // namespace

ProcessFacts probe_process(int pid)
{
    ProcessFacts facts;
    facts.pid = pid;
    const std::string dir = "/proc/" + std::to_string(pid);
    // Read whole (a few MiB at most for a large program) and at once: the
    // files are the kernel's, of a process that may end while we read.
    const Result<std::string> maps_text = read_small_file((dir + "/maps").c_str(), 64 << 20);
    if (!maps_text) {
        facts.error = "cannot read " + dir + "/maps (no such process, or not yours)";
        return facts;
    }
    facts.found = true;
    std::istringstream maps(*maps_text);
    std::string line;
    while (std::getline(maps, line)) {
        const size_t slash = line.find('/');
        if (slash == std::string::npos)
            continue;
        const std::string path = line.substr(slash);
        if (file_named(path, "libgdrhook.so"))
            facts.gdrhook = path;
        else if (file_named(path, "libucm_cuda.so"))
            facts.ucm_cuda = path;
        else if (file_named(path, "libucm.so"))
            facts.ucm = path;
    }
    // What could be read of it: a process may end while it is read.
    std::istringstream environ(read_small_file((dir + "/environ").c_str(), 16 << 20).value());
    std::map<std::string, std::string> variables;
    std::string entry;
    while (std::getline(environ, entry, '\0')) {
        const size_t eq = entry.find('=');
        if (eq != std::string::npos)
            variables[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    facts.settings = gdrhook::parse_config(
        [&](const char *name) {
            auto found = variables.find(name);
            return found == variables.end() ? nullptr : found->second.c_str();
        },
        pid, facts.rejected);
    for (const auto &variable : variables)
        gdrhook::check_variable_name(variable.first, facts.rejected);
    if (auto mode = variables.find("UCX_MEM_CUDA_HOOK_MODE"); mode != variables.end())
        facts.ucx_cuda_hook_mode = mode->second;
    return facts;
}

UcxReliance judge_ucx(const ProcessFacts &p)
{
    UcxReliance r;
    if (p.gdrhook.empty() || p.ucm.empty())
        return r;
    r.applies = true;
    const bool bridge = !p.settings.disabled && p.settings.ucx != UcxBridgeMode::off;
    const std::string mode =
        p.ucx_cuda_hook_mode.empty() ? "UCX's default" : terminal_text(p.ucx_cuda_hook_mode);
    if (bridge) {
        r.what = std::string("gdrhook and UCX both active: UCX's CUDA memory caches rely on "
                             "gdrhook (GDRHOOK_UCX=") +
                 to_string(p.settings.ucx) +
                 "), which marks UCX's CUDA memory events external and dispatches every free "
                 "before it runs";
        if (!p.ucm_cuda.empty())
            r.what += "; UCX's CUDA module is loaded too: a cache made before gdrhook found "
                      "libucm may also have installed UCX's own hooks (" +
                      mode + "), and then hears of some frees twice, which changes nothing";
        return r;
    }
    const std::string why = p.settings.disabled ? "GDRHOOK_DISABLE=1" : "GDRHOOK_UCX=off";
    // Neither gdrhook nor UCX's own hooks tell UCX's caches of frees.
    const char *blind = p.ucm_cuda.empty()               ? "UCX's CUDA module not loaded"
                        : p.ucx_cuda_hook_mode == "none" ? "UCX_MEM_CUDA_HOOK_MODE=none"
                                                         : nullptr;
    if (blind) {
        r.problem = true;
        r.what = "gdrhook and UCX both loaded, the bridge off (" + why + ") and " + blind +
                 ": UCX's CUDA memory caches hear of no CUDA free";
        r.advice = "leave GDRHOOK_UCX at auto (or on) so that gdrhook tells UCX of every free";
        return r;
    }
    r.what = "gdrhook and UCX's CUDA hooks both active, the bridge off (" + why +
             "): UCX's caches rely on UCX's own hooks (" + mode +
             "), which miss context teardowns; gdrhook's cache relies on gdrhook";
    r.advice = "GDRHOOK_UCX=auto makes UCX's caches rely on gdrhook, which sees every free";
    return r;
}

} // namespace gdrhook::cli
