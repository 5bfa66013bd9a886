// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "merged_reader.h"

#include <algorithm>
#include <ostream>

namespace gdrhook::cli {

MalformedLineReport::MalformedLineReport(std::ostream &out, const std::vector<std::string> &paths)
    : out_(out), paths_(paths), per_file_(paths.size(), 0)
{
}

void MalformedLineReport::malformed(uint32_t file, uint64_t line, const std::string &reason)
{
    ++total_;
    if (++per_file_[file] <= shown_per_file)
        out_ << paths_[file] << ':' << line << ": malformed line: " << reason << '\n';
}

void MalformedLineReport::finish()
{
    for (size_t i = 0; i < per_file_.size(); ++i)
        if (per_file_[i] > shown_per_file)
            out_ << paths_[i] << ": " << per_file_[i] - shown_per_file
                 << " more malformed line(s) not shown\n";
}

MergedLogReader::MergedLogReader(std::vector<std::string> paths, MalformedLineSink &sink)
    : paths_(std::move(paths)), sink_(sink), strings_(std::make_unique<StringTable>())
{
}

std::vector<std::string> MergedLogReader::open()
{
    std::vector<std::string> errors;
    sources_.clear();
    sources_.resize(paths_.size());
    for (size_t i = 0; i < paths_.size(); ++i) {
        auto reader = std::make_unique<LogFileReader>(static_cast<uint32_t>(i), *strings_, sink_);
        Status status = reader->open(paths_[i]);
        if (!status.ok()) {
            errors.push_back(file_error(paths_[i], status));
            continue;
        }
        sources_[i].reader = std::move(reader);
        if (advance(i))
            push(i);
    }
    return errors;
}

bool MergedLogReader::advance(size_t source)
{
    Source &s = sources_[source];
    while (s.reader->next(s.pending, s.where))
        if (s.pending.ts_ns >= min_ts_)
            return true;
    return false;
}

// A binary heap by hand rather than std::priority_queue: the comparison
// reads the pending events, and ties break on the file index so the merge
// is deterministic.
bool MergedLogReader::comes_after(size_t a, size_t b) const
{
    const LogEvent &x = sources_[a].pending, &y = sources_[b].pending;
    return x.ts_ns != y.ts_ns ? x.ts_ns > y.ts_ns : a > b;
}

void MergedLogReader::push(size_t source)
{
    heap_.push_back(source);
    auto later = [this](size_t a, size_t b) { return comes_after(a, b); };
    std::push_heap(heap_.begin(), heap_.end(), later);
}

size_t MergedLogReader::pop()
{
    auto later = [this](size_t a, size_t b) { return comes_after(a, b); };
    std::pop_heap(heap_.begin(), heap_.end(), later);
    size_t top = heap_.back();
    heap_.pop_back();
    return top;
}

const LogEvent *MergedLogReader::next(SourceLocation &where)
{
    // The event handed out last time lived in its source's pending slot;
    // only now may that slot be refilled.
    if (current_ != SIZE_MAX) {
        if (advance(current_))
            push(current_);
        current_ = SIZE_MAX;
    }
    if (heap_.empty())
        return nullptr;
    current_ = pop();
    where = sources_[current_].where;
    return &sources_[current_].pending;
}

std::vector<std::string> MergedLogReader::read_errors() const
{
    std::vector<std::string> errors;
    for (const auto &s : sources_)
        if (s.reader && !s.reader->read_error().empty())
            errors.push_back(s.reader->read_error());
    return errors;
}

uint64_t MergedLogReader::bytes_read() const
{
    uint64_t total = 0;
    for (const auto &s : sources_)
        if (s.reader)
            total += s.reader->bytes_read();
    return total;
}

} // namespace gdrhook::cli
