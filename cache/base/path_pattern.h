// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The grammar of a log's path (GDRHOOK_EVENTS, `gdrhook run --events`),
// written once: the shim expands a pattern to the file it writes, and
// `gdrhook run` turns the same pattern into the glob that finds the files
// its program wrote (tools/cli/run/run_command.cpp). Both split it here,
// and both name the host as short_host_name() does.
#pragma once

#include "cache/base/result.h"

#include <string>
#include <vector>

namespace gdrhook {

// What a log name's pattern may say: %p the pid, %h the short host name,
// %r the rank ("x" when unknown), %% a %.
struct PathNames {
    int pid = 0;
    std::string host;
    std::string rank;
};

// A pattern, split: text to keep as written, or a name to put in.
struct PathPiece {
    enum class Kind { text, pid, host, rank } kind = Kind::text;
    std::string text; // Kind::text: as written, %% already a %
};

// The pattern's pieces; refused (why() says which) for any other %
// sequence, or a % at the end.
Result<std::vector<PathPiece>> split_path_pattern(const std::string &pattern);

// The pattern with its % sequences expanded; refused (why() says which)
// for any other % sequence, or a % at the end.
Result<std::string> expand_path_pattern(const std::string &pattern, const PathNames &names);

// The host name as %h and a log's `process` line write it: gethostname()
// up to its first '.', each '/' made a '_', and "localhost" where that
// leaves nothing (no name, or one that starts with a '.'): %h never makes
// an empty component of a path, a leading dot or a folder.
std::string short_host_name();
std::string short_host_name_of(const std::string &host_name);

} // namespace gdrhook
