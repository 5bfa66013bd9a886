// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/log_file_set.h"

#include <sys/resource.h>

#include <algorithm>

namespace gdrhook::cli {

LogFileSet::LogFileSet(std::vector<std::string> paths, MalformedLineSink &sink)
    : paths_(std::move(paths)), sink_(sink), strings_(std::make_unique<StringTable>()),
      parser_(std::make_unique<LineParser>(*strings_))
{}

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

void LogFileSet::prepare()
{
    readers_.clear();
    readers_.resize(paths_.size());
    size_t files = std::max<size_t>(paths_.size(), 1);
    chunk_ = std::clamp(buffer_budget / files, min_chunk, LineReader::default_chunk);
    kept_open_ = paths_.size() > 1 ? open_file_budget(reserved_fds) : SIZE_MAX;
}

Result<void> LogFileSet::open_one(size_t file)
{
    auto reader =
        std::make_unique<LogFileReader>(static_cast<uint32_t>(file), *parser_, sink_, chunk_);
    if (file >= kept_open_)
        reader->close_between_reads();
    Status status = reader->open(paths_[file]);
    if (!status.ok())
        return Result<void>::failure(status, file_error(paths_[file], status));
    readers_[file] = std::move(reader);
    return {};
}

std::vector<std::string> LogFileSet::read_errors() const
{
    std::vector<std::string> errors;
    for (const auto &reader : readers_)
        if (reader && !reader->read_error().empty())
            errors.push_back(reader->read_error());
    return errors;
}

uint64_t LogFileSet::bytes_read() const
{
    uint64_t total = 0;
    for (const auto &reader : readers_)
        if (reader)
            total += reader->bytes_read();
    return total;
}

} // namespace gdrhook::cli
