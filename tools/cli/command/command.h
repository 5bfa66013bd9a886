// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A command of the tool, as its room adds it: each room declares its own
// subcommand, its options and their checks (`add_run`, `add_log`,
// `add_doctor`, `add_node`, `add_epilog`), and main() only parses and
// runs the one given. What several rooms' commands share is here.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace gdrhook::cli {

// The command line as main() received it, and how many of its words CLI11
// parsed (`gdrhook run` hands CLI11 only the words before its first `--`).
struct CommandLine {
    int argc = 0;
    char **argv = nullptr;
    int parsed = 0;
};

// A subcommand its room added: run once CLI11 has parsed it, with the
// options it bound; returns the exit status.
struct Command {
    CLI::App *app = nullptr;
    std::function<int(const CommandLine &)> run;
};

// The footer of a command whose exit status is the tool's own.
extern const char *const exit_footer;

// --proc and --sys: where a command that reads the machine finds them.
void add_machine_roots(CLI::App *command, std::string &proc_root, std::string &sys_root);

} // namespace gdrhook::cli
