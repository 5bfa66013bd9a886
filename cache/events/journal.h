// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The journal: a file beside the event log, mapped MAP_SHARED, that holds
// the event queue's cells (journal_layout.h). An event is in the file's
// page cache from the moment its push returns, and the page cache outlives
// the process however it ends (abort, a fatal signal, SIGKILL, the OOM
// killer): `gdrhook log recover` turns what is left into log lines. Pushes
// stay plain stores; no system call, no msync on the record path.
//
// The process holds a write lock (fcntl) on the file while it lives: the
// kernel drops it at death, which is how the tool tells a dead process's
// journal from a live one's. The journal is removed once everything
// recorded was written (exit, _exit, exec).
#pragma once

#include "cache/base/owned_fd.h"
#include "cache/base/result.h"

#include <cstddef>
#include <string>

namespace gdrhook {

struct JournalHeader;

class Journal {
public:
    Journal() = default;
    Journal(const Journal &) = delete;
    Journal &operator=(const Journal &) = delete;

    // Creates, locks and maps the journal of the log at `log_path` for a
    // queue of `capacity` cells of `cell_bytes`; where it cannot, why (the
    // queue then lives in ordinary memory).
    Result<void> create(const std::string &log_path, size_t capacity, size_t cell_bytes, int pid);

    // The queue's cells in the mapping; nullptr without a journal.
    void *cells() const;
    const std::string &path() const { return path_; }

    // Everything recorded is in the log: the file goes. The mapping stays
    // (the queue goes on using it after shutdown); nothing is recoverable
    // from it any more.
    void remove();

    // The log could not take everything (a full file system): the file
    // stays for `gdrhook log recover`, saying how many events it could
    // not hold either. Returns its path ("" without a journal).
    std::string keep_for_recovery(uint64_t lost_events);

    // In a forked child, before its queue is reset: the cells are shared
    // with the parent's file, so the child maps a journal of its own (for
    // the log at `log_path`) at the same address. Where that fails, private
    // memory takes the address: the child never writes the parent's cells.
    void move_to_child(const std::string &log_path, int pid);

private:
    Result<void> map_new_file(const std::string &log_path, int pid, void *at);

    OwnedFd fd_;                      // holds the lock; a program may close it (owned_fd.h)
    JournalHeader *header_ = nullptr; // the start of the mapping
    size_t mapped_bytes_ = 0;
    size_t capacity_ = 0;
    size_t cell_bytes_ = 0;
    std::string path_;
};

} // namespace gdrhook
