// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/path_pattern.h"

#include <unistd.h>

namespace gdrhook {

Result<std::vector<PathPiece>> split_path_pattern(const std::string &pattern)
{
    std::vector<PathPiece> pieces;
    auto text = [&]() -> std::string & {
        if (pieces.empty() || pieces.back().kind != PathPiece::Kind::text)
            pieces.push_back({PathPiece::Kind::text, {}});
        return pieces.back().text;
    };
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '%') {
            text() += pattern[i];
            continue;
        }
        const char code = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
        switch (code) {
        case 'p': pieces.push_back({PathPiece::Kind::pid, {}}); break;
        case 'h': pieces.push_back({PathPiece::Kind::host, {}}); break;
        case 'r': pieces.push_back({PathPiece::Kind::rank, {}}); break;
        case '%': text() += '%'; break;
        default:
            return Result<std::vector<PathPiece>>::failure(
                Status::error(StatusCode::invalid, 0, "not a path pattern"),
                code ? std::string("unknown sequence %") + code + " (known: %p %h %r %%)"
                     : std::string("a % at the end (known: %p %h %r %%)"));
        }
        ++i;
    }
    return pieces;
}

Result<std::string> expand_path_pattern(const std::string &pattern, const PathNames &names)
{
    const Result<std::vector<PathPiece>> pieces = split_path_pattern(pattern);
    if (!pieces)
        return Result<std::string>::failure(pieces.status(), pieces.why());
    std::string out;
    for (const PathPiece &piece : *pieces) {
        switch (piece.kind) {
        case PathPiece::Kind::text: out += piece.text; break;
        case PathPiece::Kind::pid: out += std::to_string(names.pid); break;
        case PathPiece::Kind::host: out += names.host; break;
        case PathPiece::Kind::rank: out += names.rank.empty() ? "x" : names.rank; break;
        }
    }
    return out;
}

std::string short_host_name_of(const std::string &host_name)
{
    std::string host = host_name.substr(0, host_name.find('.'));
    for (char &c : host)
        if (c == '/')
            c = '_';
    return host.empty() ? "localhost" : host;
}

std::string short_host_name()
{
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0)
        return short_host_name_of("");
    return short_host_name_of(name);
}

} // namespace gdrhook
