// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "tools/slurm/step_verdicts.h"

#include "cache/base/safe_file.h"
#include "cache/base/unique_fd.h"
#include "tools/cli/job/verdict_states.h"
#include "tools/cli/terminal/terminal_text.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

namespace gdrhook::slurm {
namespace {

// The first line of the file open at `fd`, at most 4 KiB of it.
std::string first_line(int fd)
{
    std::string text;
    char buffer[4096];
    ssize_t got;
    while (text.size() < sizeof buffer && (got = read(fd, buffer, sizeof buffer)) != 0) {
        if (got < 0)
            break;
        text.append(buffer, static_cast<size_t>(got));
        if (text.find('\n') != std::string::npos)
            break;
    }
    return text.substr(0, std::min(text.find('\n'), sizeof buffer));
}

std::vector<std::string> names_in(int folder, const std::string &suffix)
{
    std::vector<std::string> names;
    // Its own descriptor: closedir() closes the one it reads.
    DIR *listing = fdopendir(dup(folder));
    if (!listing)
        return names;
    rewinddir(listing);
    while (const dirent *entry = readdir(listing)) {
        const std::string name = entry->d_name;
        if (name.size() > suffix.size() &&
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
            names.push_back(name);
    }
    closedir(listing);
    std::sort(names.begin(), names.end());
    return names;
}

} // namespace

StepVerdicts step_verdicts(int folder, const std::string &folder_name, const std::string &job,
                           const std::string &step)
{
    using cli::terminal_text;
    StepVerdicts verdicts;
    std::vector<std::string> &lines = verdicts.lines;
    const std::string suffix = ".step" + step + ".verdict.txt";
    for (const std::string &name : names_in(folder, suffix)) {
        const std::string path = terminal_text(folder_name + "/" + name);
        OpenedFile file = open_for_reading(folder, name.c_str(), Owner::me_or_root(), true);
        if (!file) {
            lines.push_back("gdrhook: " + path + " not read: " + file.why());
            continue;
        }
        const std::string line = first_line(file->fd.get());
        ++verdicts.nodes;
        // A step that made no CUDA call under the shim: no line.
        const std::string host = name.substr(0, name.size() - suffix.size());
        const std::string quiet = "gdrhook: job " + job + " step " + step + " on " + host + ": " +
                                  std::string(cli::verdict_no_cuda_call) + ";";
        if (!line.empty() && line.compare(0, quiet.size(), quiet) != 0)
            lines.push_back(terminal_text(line) + " (" + path + ")");
    }
    return verdicts;
}

} // namespace gdrhook::slurm
