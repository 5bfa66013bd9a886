// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Runs a program root waits for, but not for ever: `gdrhook epilog`, which
// reads what the job's user left (its logs, as that user), so the user
// can make it last (a log of terabytes of holes) or stop it (SIGSTOP).
// Past the limit the program and all it started (its own process group)
// are killed.
#pragma once

#include "cache/base/result.h"

#include <string>
#include <vector>

namespace gdrhook::slurm {

struct LimitedRun {
    std::string first_line; // of its standard output
    bool timed_out = false;
};

// Fails where the program could not be started or waited for: why() is
// the system's words for it.
Result<LimitedRun> run_with_limit(const std::vector<std::string> &words,
                                  const std::vector<std::string> &env, int seconds);

} // namespace gdrhook::slurm
