// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A field of one event line read without a JSON parser: the shim writes
// flat objects of integers and strings (docs/log-format.md), so a scan
// finds a field, and a torn or foreign line just yields nothing. For the
// paths that must not depend on parsing a whole line (the tail of a log
// being recovered) and for tests that count millions of lines.
#pragma once

#include <string>
#include <string_view>

namespace gdrhook::cli {

// The value of "key" as written (a string's quotes removed, its escapes
// kept); empty when the line has no such field or ends inside it.
inline std::string_view value_of(std::string_view line, std::string_view key)
{
    const std::string needle = "\"" + std::string(key) + "\":";
    size_t at = line.find(needle);
    if (at == std::string_view::npos)
        return {};
    at += needle.size();
    if (at < line.size() && line[at] == '"') {
        const size_t end = line.find('"', at + 1);
        return end == std::string_view::npos ? std::string_view{}
                                             : line.substr(at + 1, end - at - 1);
    }
    const size_t end = line.find_first_of(",}", at);
    return line.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
}

} // namespace gdrhook::cli
