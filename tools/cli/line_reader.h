// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "cache/status.h"
#include "cache/unique_fd.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace gdrhook::cli {

// Splits a file into lines through one fixed buffer, so memory stays the
// same whatever the file's size. Each line is handed out in place, with
// at least `padding` readable bytes after it: simdjson reads past the end
// of its input and needs that slack, and giving it here avoids a copy.
class LineReader {
public:
    // Lines longer than this are reported as too long and skipped; the
    // shim's own lines are under 1 KiB.
    static constexpr size_t max_line = 64 * 1024;
    static constexpr size_t chunk = 512 * 1024;

    struct Line {
        const char *data = nullptr;
        size_t size = 0;      // without the newline
        size_t capacity = 0;  // readable bytes from data, >= size + padding
        uint64_t number = 0;  // 1-based
        bool too_long = false;// data is empty; the line was skipped
    };

    explicit LineReader(size_t padding);

    // Opens @p path. An error is io_error with the errno of open(), or
    // invalid with EISDIR for a directory; file_error() words it.
    Status open(const std::string &path);

    // The next line, or false at the end of the file. A read error ends
    // the file early and is kept in read_error().
    bool next(Line &line);

    const std::string &read_error() const { return read_error_; }
    uint64_t bytes_read() const { return bytes_read_; }

private:
    bool fill();

    UniqueFd fd_;
    std::string path_;
    size_t alloc_size_;
    std::unique_ptr<char[]> buffer_;
    size_t begin_ = 0; // first unconsumed byte
    size_t end_ = 0;   // one past the last byte read
    uint64_t line_number_ = 0;
    uint64_t bytes_read_ = 0;
    bool eof_ = false;
    bool skipping_ = false; // inside a line longer than max_line
    std::string read_error_;
};

// "cannot open 'PATH': No such file or directory": a Status from open()
// with the file it was about.
std::string file_error(const std::string &path, const Status &status);

} // namespace gdrhook::cli

