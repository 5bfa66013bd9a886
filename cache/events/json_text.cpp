// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/json_text.h"

#include <cstring>

namespace gdrhook {
namespace {

// Bytes of the valid UTF-8 character starting at `s` (of `left` bytes),
// or 0 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF).
size_t utf8_length(const unsigned char *s, size_t left)
{
    const unsigned char c = s[0];
    size_t length;
    unsigned char low = 0x80, high = 0xbf; // the second byte's range
    if (c >= 0xc2 && c <= 0xdf) {
        length = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        length = 3;
        if (c == 0xe0)
            low = 0xa0;
        else if (c == 0xed)
            high = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        length = 4;
        if (c == 0xf0)
            low = 0x90;
        else if (c == 0xf4)
            high = 0x8f;
    } else {
        return 0;
    }
    if (left < length || s[1] < low || s[1] > high)
        return 0;
    for (size_t i = 2; i < length; ++i)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return length;
}

} // namespace

size_t write_json_text(std::string_view text, char *out, size_t room)
{
    static const char hex[] = "0123456789abcdef";
    const auto *s = reinterpret_cast<const unsigned char *>(text.data());
    const size_t size = text.size();
    size_t written = 0;
    for (size_t i = 0; i < size;) {
        const unsigned char c = s[i];
        char escape[8];
        const char *piece = escape;
        size_t piece_length = 1, consumed = 1;
        if (c == '"' || c == '\\') {
            escape[0] = '\\';
            escape[1] = static_cast<char>(c);
            piece_length = 2;
        } else if (c < 0x20) {
            memcpy(escape, "\\u00", 4);
            escape[4] = hex[c >> 4];
            escape[5] = hex[c & 15];
            piece_length = 6;
        } else if (c < 0x80) {
            escape[0] = static_cast<char>(c);
        } else if (size_t length = utf8_length(s + i, size - i)) {
            piece = reinterpret_cast<const char *>(s + i);
            piece_length = consumed = length;
        } else {
            piece = "\\ufffd";
            piece_length = 6;
        }
        if (written + piece_length > room)
            break;
        memcpy(out + written, piece, piece_length);
        written += piece_length;
        i += consumed;
    }
    return written;
}

void append_json_string(std::string &out, std::string_view text)
{
    const size_t start = out.size();
    out.resize(start + 2 + text.size() * 6);
    out[start] = '"';
    const size_t length = write_json_text(text, out.data() + start + 1, text.size() * 6);
    out[start + 1 + length] = '"';
    out.resize(start + 2 + length);
}

} // namespace gdrhook
