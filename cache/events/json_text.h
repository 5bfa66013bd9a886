// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Text inside a JSON string of the log. Every string the log holds is
// escaped here: the program's command line and paths are its own bytes,
// and a journal read back by `gdrhook log recover` may come from anyone
// (its strings are a copy the recording process wrote, not the tool's).
// Quotes, backslashes and control characters are escaped; a byte that is
// not part of valid UTF-8 becomes \ufffd (U+FFFD, docs/log-format.md), so
// every line is valid JSON and one line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gdrhook {

// Writes the escaped `text` (no quotes) into `out`, at most `room` bytes,
// never cutting an escape or a character. Returns the bytes written.
size_t write_json_text(std::string_view text, char *out, size_t room);

// `text` escaped, between quotes, appended to `out`.
void append_json_string(std::string &out, std::string_view text);

} // namespace gdrhook
