// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Text a process chose (its name in /proc/PID/comm, a path it mapped),
// made safe to print on the terminal of whoever runs gdrhook: a process
// can set its name to any bytes (prctl PR_SET_NAME), and escapes or a
// carriage return would reach root's terminal as commands or rewrite
// what root reads. Every command prints such text through this: as an
// UntrustedText where a field holds it, and the tool's stdout and stderr
// escape whatever else slips through (terminal_stream.h).
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace gdrhook::cli {

// `text` with every byte that is not printable ASCII written as \xNN,
// and a backslash as \\ (so the escaped text says which bytes it held).
std::string terminal_text(std::string_view text);

// A line of the tool's own words with names in it (a finding of doctor's):
// a newline in it is a name's, written as \x0a so that it cannot start a
// line of the tool's; the tool's stdout and stderr escape the other
// controls (terminal_stream.h).
std::string on_one_line(std::string_view line);

// Bytes a log, /proc or a file name chose (a command line, a host, a
// process's name, a file's name). There is no way to a stream but
// terminal_text(): no conversion to a string, one operator<< that
// escapes. raw() is for what is no terminal (JSON, which escapes them
// itself; comparisons and keys).
class UntrustedText {
public:
    UntrustedText() = default;
    // From a string freely: the way out is what is guarded.
    UntrustedText(std::string bytes) : bytes_(std::move(bytes)) {}
    UntrustedText(const char *bytes) : bytes_(bytes) {}
    const std::string &raw() const { return bytes_; }
    bool empty() const { return bytes_.empty(); }
    std::string shown() const { return terminal_text(bytes_); }
    friend std::ostream &operator<<(std::ostream &out, const UntrustedText &text)
    {
        return out << terminal_text(text.bytes_);
    }
    friend bool operator==(const UntrustedText &a, const UntrustedText &b)
    {
        return a.bytes_ == b.bytes_;
    }
    friend bool operator<(const UntrustedText &a, const UntrustedText &b)
    {
        return a.bytes_ < b.bytes_;
    }

private:
    std::string bytes_;
};

} // namespace gdrhook::cli
