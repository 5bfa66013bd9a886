// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What srun prints of a step's verdicts: the first line of each
// `HOST.stepSTEP.verdict.txt` in the job's folder, one per node that
// judged the step, but for a step that made no CUDA call under the shim,
// whose line would be noise. Only a file of srun's user (or root) is read, never
// one at a symbolic link, and what it says reaches the terminal escaped:
// another user who could write in the folder (one its user opened to all)
// can neither plant an "OK" nor send the terminal its escapes.
#pragma once

#include <string>
#include <vector>

namespace gdrhook::slurm {

struct StepVerdicts {
    // One line to print per verdict file: the verdict and its file, or why
    // the file was not read; none for a step that made no CUDA call.
    std::vector<std::string> lines;
    unsigned nodes = 0; // the verdict files read: the nodes heard from
};

// The verdicts of step `step` of job `job` in the folder open at `folder`
// (FOLDER names it in the lines).
StepVerdicts step_verdicts(int folder, const std::string &folder_name, const std::string &job,
                           const std::string &step);

} // namespace gdrhook::slurm
