// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The plugin's arguments, as plugstack.conf gives them (README, "Slurm"),
// read once into one struct; an unknown or bad one is refused with a line
// that names it.
#pragma once

#include "cache/base/result.h"
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

// A job's mode (--gdrhook=MODE, default=MODE), made lower case, where it
// is one of on, off and the words the shim's settings table accepts for
// GDRHOOK_PIN (cache/base/config.cpp); else a failure, "is not a mode:
// expected " and those words. Checked where the option is given, so that
// srun and sbatch refuse a misspelt mode before anything runs.
Result<std::string> check_mode(const std::string &given);

// Reads `av` into `arguments`; fails with what is wrong, naming the
// argument, and then leaves `arguments` as they were (none of the line is
// taken).
Result<void> read_plugin_arguments(int ac, char **av, PluginArguments &arguments);

} // namespace gdrhook::slurm
