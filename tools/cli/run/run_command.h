// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace gdrhook::cli {

// `gdrhook run` options. Empty strings mean "not given": the variable is
// then left as the environment has it, and the shim's default applies.
struct RunOptions {
    std::vector<std::string> command; // program and its arguments
    std::string events;               // GDRHOOK_EVENTS; default ./gdrhook-<pid>.%p.jsonl
    // The GDRHOOK_* variables the options set (run_subcommand.cpp's table),
    // by name; an empty value is an option not given.
    std::map<std::string, std::string> settings;
    std::string library; // the shim; else GDRHOOK_LIBRARY, else found
    bool summary = true;
};

// The environment the program runs with: @p base (NAME=value strings)
// with LD_PRELOAD led by @p library and the GDRHOOK_* variables set.
std::vector<std::string> run_environment(const RunOptions &options, const std::string &library,
                                         const std::string &events,
                                         const std::vector<std::string> &base);

// Runs the program under the shim and returns its exit status (128 + the
// signal if it was killed; as env: 127 if there is no such program, 126
// if there is one that cannot be executed (program_lookup.h)); a short
// summary of its events goes to @p err when it ends.
int run_program(const RunOptions &options, std::ostream &err);

} // namespace gdrhook::cli
