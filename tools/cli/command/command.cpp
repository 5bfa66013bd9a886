// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "command/command.h"

namespace gdrhook::cli {

const char *const exit_footer =
    "\nExit status: 0 success; 1 problems found (log check, doctor); 2 bad arguments, "
    "unreadable files or malformed log lines.";

void add_machine_roots(CLI::App *command, std::string &proc_root, std::string &sys_root)
{
    command->add_option("--proc", proc_root, "where /proc is (tests, containers)")
        ->capture_default_str();
    command->add_option("--sys", sys_root, "where /sys is (tests, containers)")
        ->capture_default_str();
}

} // namespace gdrhook::cli
