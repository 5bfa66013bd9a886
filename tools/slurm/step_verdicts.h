// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What srun prints of a step's verdicts: the first line of each
// `HOST.stepSTEP.verdict.txt` in the job's folder, one per node that
// judged the step. Only a file of srun's user (or root) is read, never
// one at a symbolic link, and what it says reaches the terminal escaped:
// another user who could write in the folder (one its user opened to all)
// can neither plant an "OK" nor send the terminal its escapes.
#pragma once

#include <string>
#include <vector>

namespace gdrhook::slurm {

// One line to print per verdict file of step `step` in the folder open at
// `folder` (FOLDER names it in the lines): the verdict and its file, or
// why the file was not read.
std::vector<std::string> step_verdicts(int folder, const std::string &folder_name,
                                       const std::string &step);

} // namespace gdrhook::slurm
