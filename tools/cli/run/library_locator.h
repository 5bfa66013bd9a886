// SPDX-License-Identifier: MIT OR GPL-2.0-only
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

} // namespace gdrhook::cli
