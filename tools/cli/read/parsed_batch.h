// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/log_event.h"
#include "read/log_reader.h"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace gdrhook::cli {

// A run of one file's events, parsed on a worker thread (ParseAhead) and
// handed out on the thread that digests them (FileEvents). The lines the
// file's reader would have reported to its sink while reading them (a
// malformed line, an unfinished last line) are kept as notes, each with
// its place among the events, so that they can be reported at that very
// place, in the same order as when one thread reads the file.
struct ParsedBatch {
    struct Note {
        size_t before = 0; // how many of the batch's events came before the line
        uint64_t line = 0;
        bool unfinished = false; // an unfinished last line, else a malformed one
        std::string reason;
    };

    std::vector<LogEvent> events;
    std::vector<SourceLocation> where; // each event's
    std::vector<Note> notes;           // by line
    bool ended = false;                // the file has nothing after these
    std::exception_ptr failure;        // what stopped the worker, for the reading thread

    // Up to @p count more events of @p reader, parsed with @p parser.
    void read(LogFileReader &reader, LineParser &parser, size_t count);

    // Empty, for another file; keeps its vectors' memory.
    void clear();
};

} // namespace gdrhook::cli
