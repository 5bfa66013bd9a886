// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include <string>
#include <vector>

namespace gdrhook::cli {

// The logs the `log` commands read, from what the command line names.
struct LogInputs {
    std::vector<std::string> files;  // in the order named, each file once
    std::vector<std::string> errors; // "no file matches 'x'", ...
};

// Expands each argument: a directory stands for every `*.jsonl` file below
// it (recursively, in name order); a glob pattern (`*`, `?`, `[`) that is
// not itself a file's name, for the files it matches (in name order: for
// when the shell did not expand it, or when the list would be too long for
// the shell); anything else is a file, read or reported as it is. A file
// named twice (two patterns, a directory and a file in it) is read once.
LogInputs expand_log_inputs(const std::vector<std::string> &arguments);

} // namespace gdrhook::cli
