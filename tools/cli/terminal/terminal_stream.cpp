// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "terminal/terminal_stream.h"

#include <iostream>

namespace gdrhook::cli {

namespace {

bool passes(unsigned char byte)
{
    return (byte >= 0x20 && byte < 0x7f) || byte == '\n';
}

} // namespace

EscapingStreambuf::int_type EscapingStreambuf::overflow(int_type c)
{
    if (traits_type::eq_int_type(c, traits_type::eof()))
        return traits_type::not_eof(c);
    const char byte = traits_type::to_char_type(c);
    return xsputn(&byte, 1) == 1 ? c : traits_type::eof();
}

std::streamsize EscapingStreambuf::xsputn(const char *text, std::streamsize size)
{
    static const char hex[] = "0123456789abcdef";
    std::streamsize done = 0;
    while (done < size) {
        std::streamsize run = done;
        while (run < size && passes(static_cast<unsigned char>(text[run])))
            ++run;
        if (run > done && target_->sputn(text + done, run - done) != run - done)
            return done;
        done = run;
        if (done == size)
            break;
        const auto byte = static_cast<unsigned char>(text[done]);
        const char escaped[4] = {'\\', 'x', hex[byte >> 4], hex[byte & 15]};
        if (target_->sputn(escaped, 4) != 4)
            return done;
        ++done;
    }
    return done;
}

int EscapingStreambuf::sync()
{
    return target_->pubsync();
}

TerminalStreams::TerminalStreams()
    : out_(std::cout.rdbuf()), err_(std::cerr.rdbuf()), old_out_(std::cout.rdbuf(&out_)),
      old_err_(std::cerr.rdbuf(&err_))
{}

TerminalStreams::~TerminalStreams()
{
    std::cout.flush();
    std::cerr.flush();
    std::cout.rdbuf(old_out_);
    std::cerr.rdbuf(old_err_);
}

} // namespace gdrhook::cli
