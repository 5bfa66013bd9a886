// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/line_reader.h"
#include "read/log_event.h"
#include "read/string_table.h"

#include <memory>
#include <string>
#include <string_view>

namespace gdrhook::cli {

// Parses one line of the event log into @p event. Returns an empty string
// on success, else why the line is malformed (a missing or mistyped
// required key, bad JSON, trailing text). Unknown keys and unknown "ev"
// values are accepted and ignored. @p capacity is the number of readable
// bytes at @p data (at least size + parse_padding).
class LineParser {
public:
    static const size_t parse_padding;

    explicit LineParser(StringTable &strings);
    ~LineParser();
    LineParser(const LineParser &) = delete;
    LineParser &operator=(const LineParser &) = delete;

    std::string parse(const char *data, size_t size, size_t capacity, LogEvent &event);

    // Convenience for tests: copies @p line into a padded buffer first.
    std::string parse(std::string_view line, LogEvent &event);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Receives each malformed line; the reader goes on with the next one.
class MalformedLineSink {
public:
    virtual ~MalformedLineSink() = default;
    virtual void malformed(uint32_t file, uint64_t line, const std::string &reason) = 0;
    // The last line of a file stops short and does not parse: the writer
    // was killed in the middle of it (the kernel can stop a write between
    // two pages). Said, and skipped; not a malformed line.
    virtual void unfinished_last_line(uint32_t file, uint64_t line) { (void)file, (void)line; }
};

// Reads one event log file, in file order, in bounded memory.
class LogFileReader {
public:
    // With a parser of its own.
    LogFileReader(uint32_t file_index, StringTable &strings, MalformedLineSink &sink);
    // With @p parser, which it shares with the other files read at the same
    // time (one line is parsed at a time), and a buffer of @p chunk bytes.
    LogFileReader(uint32_t file_index, LineParser &parser, MalformedLineSink &sink, size_t chunk);

    // See LineReader::close_between_reads().
    void close_between_reads() { lines_.close_between_reads(); }

    Status open(const std::string &path);

    // The next well-formed event; false at the end of the file.
    bool next(LogEvent &event, SourceLocation &where);
    // The same with another parser and sink: a worker thread's, which
    // parses the file's lines ahead of the thread that reads its events
    // (ParseAhead). One thread at a time may call either.
    bool next(LogEvent &event, SourceLocation &where, LineParser &parser, MalformedLineSink &sink);

    const std::string &read_error() const { return lines_.read_error(); }
    uint64_t bytes_read() const { return lines_.bytes_read(); }

private:
    uint32_t file_index_;
    MalformedLineSink &sink_;
    std::unique_ptr<LineParser> own_parser_;
    LineParser &parser_;
    LineReader lines_;
};

} // namespace gdrhook::cli
