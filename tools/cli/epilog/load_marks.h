// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once
// What the shim's load marks of a step on one node say (the file the Slurm
// plugin names in GDRHOOK_LOAD_MARKS; cache/core/load_mark.cpp writes a
// line per process that loaded the shim: its mount namespace, its
// program): whether the step ran under gdrhook at all.

#include <string>

namespace gdrhook::cli {

// Why the step's processes on this node ran without gdrhook, read from the
// marks at `path`: "" where they did not (the shim was loaded, and not
// only by a container runtime whose container never loaded it).
//   no file, or no line: no process of the step loaded the shim (a task
//     started in a container that lacks it, as pyxis/enroot start one);
//   every line of one mount namespace, a container runtime's among them,
//     and `no_logs`: the runtime loaded the shim, nothing it started in
//     its own namespace did (Apptainer, podman: the shim not bound in).
std::string ran_without_gdrhook(const std::string &path, bool no_logs);

} // namespace gdrhook::cli
