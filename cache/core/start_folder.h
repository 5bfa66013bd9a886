// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The folder the process started in. A relative GDRHOOK_EVENTS (and `gdrhook
// run`'s default, `gdrhook-<pid>.%p.jsonl`) names a file there, wherever the
// program moves after: resolved at the first write, a program that changes
// folder (chdir) after, or before, its first CUDA call would write its log
// elsewhere, and a killed one split its events over two folders.
#pragma once

#include <string>

namespace gdrhook {

// `path` when it is absolute or empty, else `path` in the folder the
// process was in when the shim was loaded.
std::string absolute_from_start(const std::string &path);

} // namespace gdrhook
