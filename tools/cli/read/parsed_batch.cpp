// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/parsed_batch.h"

namespace gdrhook::cli {

namespace {

// The sink of a batch's reader: notes each line with its place.
class NoteTaker final : public MalformedLineSink {
public:
    explicit NoteTaker(std::vector<ParsedBatch::Note> &notes) : notes_(notes) {}

    void malformed(uint32_t, uint64_t line, const std::string &reason) override
    {
        notes_.push_back({events_before, line, false, reason});
    }
    void unfinished_last_line(uint32_t, uint64_t line) override
    {
        notes_.push_back({events_before, line, true, {}});
    }

    size_t events_before = 0;

private:
    std::vector<ParsedBatch::Note> &notes_;
};

} // namespace

void ParsedBatch::read(LogFileReader &reader, LineParser &parser, size_t count)
{
    NoteTaker notes(this->notes);
    size_t goal = events.size() + count;
    events.reserve(goal); // not twice what it needs, as doubling would
    where.reserve(goal);
    while (events.size() < goal) {
        notes.events_before = events.size();
        // Parsed in place: an event is a few hundred bytes.
        LogEvent &event = events.emplace_back();
        SourceLocation &place = where.emplace_back();
        if (!reader.next(event, place, parser, notes)) {
            events.pop_back();
            where.pop_back();
            ended = true;
            return;
        }
    }
}

void ParsedBatch::clear()
{
    events.clear();
    where.clear();
    notes.clear();
    ended = false;
    failure = nullptr;
}

} // namespace gdrhook::cli
