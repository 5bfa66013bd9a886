// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Where the shim, libgdrhook.so, is: the one the user named, else the
// build tree's or the install tree's, relative to the running gdrhook.
// Below `gdrhook run`, which preloads it, and `gdrhook doctor`, which
// reports it.
#pragma once

#include <string>
#include <vector>

namespace gdrhook::cli {

// Where libgdrhook.so may be, in the order `gdrhook run` tries them:
// @p explicit_path (--library or GDRHOOK_LIBRARY) alone when given; else,
// relative to the directory of the gdrhook executable, the build tree
// (../hook) and the install tree (the configured libdir, then the usual
// ../lib/x86_64-linux-gnu or ../lib/aarch64-linux-gnu, ../lib64, ../lib).
std::vector<std::string> library_candidates(const std::string &exe_dir,
                                            const std::string &explicit_path);

// The first candidate that exists, or "" (then @p tried lists them all).
std::string find_library(const std::string &exe_dir, const std::string &explicit_path,
                         std::vector<std::string> &tried);

// The directory holding the running executable ("" if unknown).
std::string executable_dir();

// The shim the user named: @p option (`gdrhook run --library`) when
// given, else GDRHOOK_LIBRARY, else "". The tool's one reader of that
// variable.
std::string named_library(const std::string &option);

// The shim the tool would preload, as find_library() finds it next to the
// running gdrhook, named_library(@p option) first: what `gdrhook run`
// loads and `gdrhook doctor` reports.
std::string find_shim(const std::string &option, std::vector<std::string> &tried);

} // namespace gdrhook::cli
