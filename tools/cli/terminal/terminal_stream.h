// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The tool's stdout and stderr as the terminal of whoever runs it sees
// them: every byte any command writes passes through one stream buffer
// that lets through printable ASCII and the newline only, and writes any
// other byte as \xNN. Text a log, /proc or a file name chose is escaped
// where it is printed (UntrustedText, terminal_text.h), newlines and
// backslashes included; this buffer holds even where a printer forgot:
// no escape sequence, carriage return, DEL or C1 control reaches the
// terminal (or slurmd's log, or a file root later reads with cat).
#pragma once

#include <streambuf>

namespace gdrhook::cli {

class EscapingStreambuf : public std::streambuf {
public:
    explicit EscapingStreambuf(std::streambuf *target) : target_(target) {}

protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char *text, std::streamsize size) override;
    int sync() override;

private:
    std::streambuf *target_;
};

// For the life of main(): std::cout and std::cerr write through an
// EscapingStreambuf each; restored as it ends.
class TerminalStreams {
public:
    TerminalStreams();
    ~TerminalStreams();
    TerminalStreams(const TerminalStreams &) = delete;
    TerminalStreams &operator=(const TerminalStreams &) = delete;

private:
    EscapingStreambuf out_;
    EscapingStreambuf err_;
    std::streambuf *old_out_;
    std::streambuf *old_err_;
};

} // namespace gdrhook::cli
