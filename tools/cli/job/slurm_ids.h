// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once
// Job and step ids as Slurm spells them, in one place: the cgroups it
// makes (job_J/step_S), the variables it sets (SLURM_JOB_ID,
// SLURM_STEP_ID) and the ids `gdrhook epilog` and the plugin pass.

#include <array>
#include <string_view>

namespace gdrhook::cli {

// The steps that have a word, not a number, for an id (slurm/spank.h's
// SLURM_BATCH_SCRIPT, SLURM_EXTERN_CONT, SLURM_INTERACTIVE_STEP).
inline constexpr std::string_view step_batch = "batch";
inline constexpr std::string_view step_extern = "extern";
inline constexpr std::string_view step_interactive = "interactive";
inline constexpr std::array<std::string_view, 3> step_words = {step_batch, step_extern,
                                                               step_interactive};

// A job id: decimal digits, at most ten (a 32-bit id).
bool is_job_id(std::string_view text);

// A step id: a job id's digits or one of the step words.
bool is_step_id(std::string_view text);

} // namespace gdrhook::cli
