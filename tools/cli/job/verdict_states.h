// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once
// The states a step's verdict line opens with, after
// "gdrhook: job J step S on HOST: ", that `gdrhook epilog` writes and the
// Slurm plugin reads back when srun prints the step's verdicts.

#include <string_view>

namespace gdrhook::cli {

// The shim was loaded in the step's processes and none of them made a
// CUDA call: nothing to say on the job's output (`srun hostname` under a
// site's default=on), which the plugin leaves out.
inline constexpr std::string_view verdict_no_cuda_call = "no CUDA call";

} // namespace gdrhook::cli
