// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "merged_reader.h"

#include <sys/resource.h>

#include <algorithm>
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
    : paths_(std::move(paths)), sink_(sink), strings_(std::make_unique<StringTable>()),
      parser_(std::make_unique<LineParser>(*strings_))
{
}

namespace {

// How many files may stay open: the soft limit, raised to the hard one
// first, less what the rest of the tool needs.
size_t open_file_budget(size_t reserved)
{
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
        return 256;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
            getrlimit(RLIMIT_NOFILE, &limit);
    }
    if (limit.rlim_cur == RLIM_INFINITY)
        return SIZE_MAX;
    return limit.rlim_cur > reserved ? static_cast<size_t>(limit.rlim_cur) - reserved : 1;
}

} // namespace

std::vector<std::string> MergedLogReader::open()
{
    std::vector<std::string> errors;
    sources_.clear();
    sources_.resize(paths_.size());
    heap_.reserve(paths_.size());
    size_t files = std::max<size_t>(paths_.size(), 1);
    size_t chunk = std::clamp(buffer_budget / files, min_chunk, LineReader::default_chunk);
    size_t kept_open = paths_.size() > 1 ? open_file_budget(reserved_fds) : SIZE_MAX;
    for (size_t i = 0; i < paths_.size(); ++i) {
        auto reader = std::make_unique<LogFileReader>(static_cast<uint32_t>(i), *parser_, sink_, chunk);
        if (i >= kept_open)
            reader->close_between_reads();
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
    while (s.reader->next(s.pending, s.where)) {
        if (s.pending.ts_ns >= min_ts_) {
            if (lookahead_)
                lookahead_(s.pending, s.where);
            return true;
        }
    }
    return false;
}

// A binary heap by hand: after an event is handed out, its file's next
// event usually belongs near the top again, and one sift down from the
// top (replace_top) costs half of a pop and a push. Ties break on the file
// index so the merge is deterministic.
bool MergedLogReader::later(const HeapEntry &a, const HeapEntry &b)
{
    return a.ts_ns != b.ts_ns ? a.ts_ns > b.ts_ns : a.source > b.source;
}

void MergedLogReader::push(size_t source)
{
    heap_.push_back({sources_[source].pending.ts_ns, source});
    std::push_heap(heap_.begin(), heap_.end(), later);
}

void MergedLogReader::replace_top(int64_t ts_ns)
{
    size_t i = 0, n = heap_.size();
    HeapEntry moving{ts_ns, heap_[0].source};
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && later(heap_[child], heap_[child + 1]))
            ++child;
        if (!later(moving, heap_[child]))
            break;
        heap_[i] = heap_[child];
        i = child;
    }
    heap_[i] = moving;
}

const LogEvent *MergedLogReader::next(SourceLocation &where)
{
    // The event handed out last time lived in its source's pending slot,
    // and its source is still on top of the heap: only now may that slot
    // be refilled.
    if (current_ != SIZE_MAX) {
        if (advance(current_)) {
            replace_top(sources_[current_].pending.ts_ns);
        } else {
            std::pop_heap(heap_.begin(), heap_.end(), later);
            heap_.pop_back();
        }
        current_ = SIZE_MAX;
    }
    if (heap_.empty())
        return nullptr;
    current_ = heap_.front().source;
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
