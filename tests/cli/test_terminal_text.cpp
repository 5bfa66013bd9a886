// SPDX-License-Identifier: MIT OR GPL-2.0-only
// Text a process, a log or a file name chose, as the tool prints it: no
// byte a terminal acts on gets through, and the escaped text still says
// which bytes it held.
#include "terminal/terminal_text.h"

#include <catch2/catch.hpp>

#include <string>

using namespace gdrhook::cli;

namespace {

bool printable_ascii(const std::string &text)
{
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte >= 0x7f)
            return false;
    }
    return true;
}

} // namespace

TEST_CASE("terminal text passes printable ASCII and writes every other byte as \\xNN")
{
    for (int value = 0; value < 256; ++value) {
        const std::string byte(1, static_cast<char>(value));
        const std::string shown = terminal_text(byte);
        INFO("byte " << value << " shown as " << shown);
        CHECK(printable_ascii(shown));
        if (value == '\\')
            CHECK(shown == "\\\\");
        else if (value >= 0x20 && value < 0x7f)
            CHECK(shown == byte);
        else
            CHECK(shown.size() == 4);
    }
}

TEST_CASE("terminal text escapes DEL, the C1 controls and invalid UTF-8")
{
    // DEL erases on some terminals; U+0080..U+009F (C2 80..C2 9F in UTF-8)
    // are the C1 controls a UTF-8 terminal may act on (U+009B is CSI), and
    // a lone 0x9b is CSI where the terminal is not UTF-8.
    CHECK(terminal_text("a\x7f"
                        "b") == "a\\x7fb");
    CHECK(terminal_text("\xc2\x9b"
                        "2J") == "\\xc2\\x9b2J");
    CHECK(terminal_text("\xc2\x80\xc2\x9f") == "\\xc2\\x80\\xc2\\x9f");
    CHECK(terminal_text("\x9b\xff\xc3") == "\\x9b\\xff\\xc3");
    CHECK(terminal_text("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") ==
          "\\x1b]8;;http://x\\x1b\\\\link\\x1b]8;;\\x1b\\\\");
    CHECK(terminal_text("\r\b\n\t") == "\\x0d\\x08\\x0a\\x09");
}
