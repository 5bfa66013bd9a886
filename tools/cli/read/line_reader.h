// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "cache/base/status.h"
#include "cache/base/unique_fd.h"

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
    // How much one read() asks for, unless the caller says otherwise: one
    // file read alone gets this; many files read together share a budget.
    static constexpr size_t default_chunk = 512 * 1024;

    struct Line {
        const char *data = nullptr;
        size_t size = 0;         // without the newline
        size_t capacity = 0;     // readable bytes from data, >= size + padding
        uint64_t number = 0;     // 1-based
        bool too_long = false;   // data is empty; the line was skipped
        bool unfinished = false; // the file ends inside it (no newline after it)
    };

    // @p chunk: the buffer's size (it grows to hold a line up to max_line).
    explicit LineReader(size_t padding, size_t chunk = default_chunk);

    // Closes the file between reads and opens it again at its offset for
    // the next one: for reading more files together than the process may
    // hold open. Call before open().
    void close_between_reads() { close_between_reads_ = true; }

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
    bool reopen();
    void grow();

    UniqueFd fd_;
    std::string path_;
    bool opened_ = false;
    bool close_between_reads_ = false;
    size_t padding_;
    size_t chunk_;      // bytes of the buffer lines may use
    size_t alloc_size_; // chunk_ + padding_
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
