// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/log_file_set.h"
#include "read/parse_ahead.h"
#include "read/parsed_batch.h"

#include <cstddef>
#include <memory>
#include <vector>

namespace gdrhook::cli {

// Each file's events in its own order, for the one thread that reads them
// (BatchedLogReader): parsed ahead by workers (ParseAhead) where they
// were, else read here, with the files' own readers and parser. A file's
// malformed lines reach @p sink just where its reader would have reported
// them, by this thread: a line found among events parsed ahead is
// reported just before the event after it, or when the file is asked for
// more after the batch's last event.
class FileEvents {
public:
    // With no workers, every file is read here, as its reader alone would.
    FileEvents(LogFileSet &files, MalformedLineSink &sink, size_t workers, size_t max_batches,
               ParseAhead::BatchSize batch_size);

    // The file's next event, or nullptr at its end. Valid until the next
    // call.
    const LogEvent *next(size_t file, SourceLocation &where);

    // The file is not read again for a while: workers may parse its next
    // events meanwhile.
    void pause(size_t file);

private:
    // A file as this thread reads it: the batch it is in, if any, with the
    // batch's notes (they may outlast it, see pause()), and whether it holds
    // the file's reader.
    struct Place {
        std::unique_ptr<ParsedBatch> batch;
        std::vector<ParsedBatch::Note> notes;
        size_t next_event = 0;
        size_t next_note = 0;
        bool claimed = false;
        bool ended = false; // its reader is at the end of the file
    };

    const LogEvent *read_here(size_t file, Place &place, SourceLocation &where);
    void report_notes_due(size_t file, Place &place);

    LogFileSet &files_;
    MalformedLineSink &sink_;
    std::vector<Place> places_;
    LogEvent event_; // read here
    std::unique_ptr<ParseAhead> ahead_; // last: its workers stop first
};

} // namespace gdrhook::cli
