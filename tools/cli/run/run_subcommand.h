// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook run`'s subcommand: its options, their checks and its footer.
#pragma once

#include "command/command.h"

namespace gdrhook::cli {

// Where gdrhook run's own words end: at its first `--`, if any; argc for
// any other command. CLI11 parses only what comes before (a `--` inside a
// subcommand would hand what follows to the top-level parser).
int run_words_end(int argc, char **argv);

Command add_run(CLI::App &app);

} // namespace gdrhook::cli
