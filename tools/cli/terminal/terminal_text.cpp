// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "terminal/terminal_text.h"

namespace gdrhook::cli {

std::string terminal_text(std::string_view text)
{
    static const char hex[] = "0123456789abcdef";
    std::string shown;
    shown.reserve(text.size());
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte == '\\') {
            shown += "\\\\";
        } else if (byte >= 0x20 && byte < 0x7f) {
            shown += c;
        } else {
            // Not only C0 and DEL: a byte of 0x80 and up may be a C1
            // control (0x9b is CSI) where the terminal is not UTF-8.
            shown += "\\x";
            shown += hex[byte >> 4];
            shown += hex[byte & 15];
        }
    }
    return shown;
}

std::string on_one_line(std::string_view line)
{
    std::string shown;
    shown.reserve(line.size());
    for (const char c : line)
        shown += c == '\n' ? std::string_view("\\x0a") : std::string_view(&c, 1);
    return shown;
}

} // namespace gdrhook::cli
