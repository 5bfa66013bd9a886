// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook log` and its subcommands (summary, check, timeline, recover):
// their options and footers.
#pragma once

#include "command/command.h"

#include <vector>

namespace gdrhook::cli {

// `gdrhook log`, which takes one of the commands returned.
std::vector<Command> add_log(CLI::App &app);

} // namespace gdrhook::cli
