// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook node`'s subcommand: its options and its footer.
#pragma once

#include "command/command.h"

namespace gdrhook::cli {

Command add_node(CLI::App &app);

} // namespace gdrhook::cli
