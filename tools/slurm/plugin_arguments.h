// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The plugin's arguments, as plugstack.conf gives them (README, "Slurm"),
// read once into one struct; an unknown or bad one is refused with a line
// that names it.
#pragma once

#include "tools/slurm/log_tree.h"

#include <string>

namespace gdrhook::slurm {

struct PluginArguments {
    std::string default_mode = "off"; // default=
    LogTreeRules log_tree;            // logdir= owner= group=
    std::string library;              // library=
    std::string tool;                 // gdrhook=
    std::string proc_root, sys_root;  // proc= sys= (tests)
    int epilog_seconds = 60;          // timeout=
};

// Reads `av` into `arguments`: "" or what is wrong, naming the argument.
std::string read_plugin_arguments(int ac, char **av, PluginArguments &arguments);

} // namespace gdrhook::slurm
