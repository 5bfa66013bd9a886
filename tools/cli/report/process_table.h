// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/log_event.h"
#include "terminal/terminal_text.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace gdrhook::cli {

// Which process wrote an event: its log file and its pid. The logs of a
// job come from many hosts, where the same pid can stand for different
// processes; a process writes one file, so the pair tells them apart.
struct ProcessKey {
    uint32_t file = 0;
    int64_t pid = 0;

    bool operator==(const ProcessKey &other) const
    {
        return file == other.file && pid == other.pid;
    }
};

struct ProcessKeyHash {
    size_t operator()(const ProcessKey &key) const
    {
        return std::hash<int64_t>()(key.pid) * 1000003u ^ key.file;
    }
};

inline ProcessKey process_key(const LogEvent &event, const SourceLocation &where)
{
    return {where.file, event.pid};
}

// Who a process is, as far as the logs say.
struct ProcessIdentity {
    ProcessKey key;
    UntrustedText host; // "" when no `process` line says
    bool has_rank = false;
    int64_t rank = 0;
};

// "rank 3, host node017, pid 4398"; "pid 4398" when the log has no
// `process` line.
std::string describe(const ProcessIdentity &who);

// "rank 3 (node017)", "pid 4398 (node017)", "pid 4398": for lists and
// legends.
std::string short_label(const ProcessIdentity &who);

// The host and rank of each process, from the `process` lines read so far.
// A pid with no line of its own (a child forked without %p in its log's
// name) takes those of the first `process` line of its file.
class ProcessTable {
public:
    // Takes note of @p event if it is a `process` line.
    void note(const LogEvent &event, const SourceLocation &where);

    ProcessIdentity identity(const ProcessKey &key) const;

    // How many `process` lines were read.
    uint64_t lines() const { return lines_; }

private:
    struct Known {
        std::string host;
        bool has_rank = false;
        int64_t rank = 0;
    };
    std::unordered_map<ProcessKey, Known, ProcessKeyHash> own_;
    std::unordered_map<uint32_t, ProcessKey> first_of_file_;
    uint64_t lines_ = 0;
};

} // namespace gdrhook::cli
