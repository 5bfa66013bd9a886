// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/merged_reader.h"

#include <cstdint>
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

void MalformedLineReport::unfinished_last_line(uint32_t file, uint64_t line)
{
    out_ << paths_[file] << ':' << line
         << ": the last line stops short (the process was killed while writing it?); skipped\n";
}

void MalformedLineReport::finish()
{
    for (size_t i = 0; i < per_file_.size(); ++i)
        if (per_file_[i] > shown_per_file)
            out_ << paths_[i] << ": " << per_file_[i] - shown_per_file
                 << " more malformed line(s) not shown\n";
}

MergedLogReader::MergedLogReader(std::vector<std::string> paths, MalformedLineSink &sink)
    : files_(std::move(paths), sink)
{
}

std::vector<std::string> MergedLogReader::open()
{
    pending_.clear();
    pending_.resize(files_.size());
    merge_.reserve(files_.size());
    return files_.open([&](size_t file) {
        if (advance(file))
            merge_.push(pending_[file].event.ts_ns, file);
    });
}

bool MergedLogReader::advance(size_t file)
{
    Pending &p = pending_[file];
    while (files_.reader(file)->next(p.event, p.where))
        if (p.event.ts_ns >= min_ts_)
            return true;
    return false;
}

const LogEvent *MergedLogReader::next(SourceLocation &where)
{
    // The event handed out last time lived in its file's pending slot, and
    // its file is still on top of the merge: only now may that slot be
    // refilled.
    if (current_ != SIZE_MAX) {
        if (advance(current_))
            merge_.replace_top(pending_[current_].event.ts_ns);
        else
            merge_.pop_top();
        current_ = SIZE_MAX;
    }
    if (merge_.empty())
        return nullptr;
    current_ = merge_.top();
    where = pending_[current_].where;
    return &pending_[current_].event;
}

} // namespace gdrhook::cli
