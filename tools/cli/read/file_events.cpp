// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/file_events.h"

namespace gdrhook::cli {

FileEvents::FileEvents(LogFileSet &files, MalformedLineSink &sink, size_t workers, size_t max_batches,
                       ParseAhead::BatchSize batch_size)
    : files_(files), sink_(sink), places_(files.size())
{
    if (workers > 0)
        ahead_ = std::make_unique<ParseAhead>(files, workers, max_batches, std::move(batch_size));
}

const LogEvent *FileEvents::next(size_t file, SourceLocation &where)
{
    Place &place = places_[file];
    if (!ahead_ || (place.claimed && !place.batch))
        return read_here(file, place, where);
    for (;;) {
        report_notes_due(file, place);
        if (place.batch) {
            ParsedBatch &batch = *place.batch;
            if (place.next_event < batch.events.size()) {
                where = batch.where[place.next_event];
                return &batch.events[place.next_event++];
            }
            ahead_->recycle(std::move(place.batch));
        }
        place.notes.clear();
        place.next_event = place.next_note = 0;
        if (place.ended || place.claimed)
            break; // the rest of this round is read here
        place.claimed = true;
        place.batch = ahead_->claim(file);
        if (!place.batch)
            break;
        place.notes.swap(place.batch->notes);
        place.ended = place.batch->ended;
    }
    return read_here(file, place, where);
}

const LogEvent *FileEvents::read_here(size_t file, Place &place, SourceLocation &where)
{
    if (place.ended)
        return nullptr;
    if (files_.reader(file)->next(event_, where))
        return &event_;
    place.ended = true;
    return nullptr;
}

// The batch's lines its reader met before the next event, or after the
// last one once that is out.
void FileEvents::report_notes_due(size_t file, Place &place)
{
    for (; place.next_note < place.notes.size() && place.notes[place.next_note].before <= place.next_event;
         ++place.next_note) {
        const ParsedBatch::Note &note = place.notes[place.next_note];
        if (note.unfinished)
            sink_.unfinished_last_line(static_cast<uint32_t>(file), note.line);
        else
            sink_.malformed(static_cast<uint32_t>(file), note.line, note.reason);
    }
}

void FileEvents::pause(size_t file)
{
    Place &place = places_[file];
    // A batch read to its last event goes back now rather than at the
    // file's next call, which reports the lines after that event (kept in
    // place.notes): a batch holds what one top-up takes (BatchedLogReader::
    // events_wanted()), and would otherwise wait a whole round.
    if (place.batch && place.next_event == place.batch->events.size())
        ahead_->recycle(std::move(place.batch));
    if (!place.claimed)
        return;
    place.claimed = false;
    ahead_->release(file, place.ended);
}

} // namespace gdrhook::cli
