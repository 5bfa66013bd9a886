// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/events_pattern.h"

#include "cache/base/path_pattern.h"

#include <glob.h>

namespace gdrhook::cli {

std::vector<std::string> expand_events_pattern(const std::string &pattern)
{
    return expand_events_pattern(pattern, short_host_name());
}

std::vector<std::string> expand_events_pattern(const std::string &pattern, const std::string &host)
{
    // The shim's grammar (path_pattern.h): %p any pid, %r any rank, %h the
    // host; the rest escaped, so a path with '*' or '[' in it only matches
    // itself. A pattern the shim refuses named no file.
    // A pattern the shim refuses names no log.
    const Result<std::vector<PathPiece>> pieces = split_path_pattern(pattern);
    if (!pieces)
        return {};
    auto literal = [](std::string &out, const std::string &text) {
        for (char c : text) {
            if (c == '*' || c == '?' || c == '[' || c == '\\')
                out += '\\';
            out += c;
        }
    };
    std::string glob_pattern;
    for (const PathPiece &piece : *pieces) {
        switch (piece.kind) {
        case PathPiece::Kind::text: literal(glob_pattern, piece.text); break;
        case PathPiece::Kind::pid: glob_pattern += "[0-9]*"; break;
        case PathPiece::Kind::rank: glob_pattern += '*'; break;
        case PathPiece::Kind::host: literal(glob_pattern, host); break;
        }
    }
    glob_t found = {};
    std::vector<std::string> files;
    if (glob(glob_pattern.c_str(), 0, nullptr, &found) == 0)
        for (size_t i = 0; i < found.gl_pathc; ++i)
            files.emplace_back(found.gl_pathv[i]);
    globfree(&found);
    return files;
}

} // namespace gdrhook::cli
