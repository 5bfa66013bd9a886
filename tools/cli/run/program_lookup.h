// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Whether the program `gdrhook run` was given can be run, found as execvp
// finds it, and the status env(1) ends with where it cannot: 127 where no
// file of that name exists, 126 where one does that cannot be executed.
// Decided before the program is started: where posix_spawn runs its child
// through fork (qemu-user), a failed exec only reaches the parent as the
// child's status 127, whatever its reason.
#pragma once

#include <string>

namespace gdrhook::cli {

struct ProgramLookup {
    int exit_status = 0; // 0: it can be run; else 126 or 127
    std::string why;     // "it is a folder", "not found in PATH", ...
};

// `name` with a '/' is that file; without one, the first file of that name
// in the folders of `search_path` (PATH; glibc's default where unset) that
// can be executed.
ProgramLookup look_up_program(const std::string &name, const char *search_path);

} // namespace gdrhook::cli
