// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "job/slurm_ids.h"

#include <algorithm>

namespace gdrhook::cli {

bool is_job_id(std::string_view text)
{
    return !text.empty() && text.size() <= 10 &&
           text.find_first_not_of("0123456789") == std::string_view::npos;
}

bool is_step_id(std::string_view text)
{
    return is_job_id(text) ||
           std::find(step_words.begin(), step_words.end(), text) != step_words.end();
}

} // namespace gdrhook::cli
