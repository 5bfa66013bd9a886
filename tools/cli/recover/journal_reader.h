// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "cache/base/result.h"
#include "cache/events/event.h"
#include "cache/events/journal_layout.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gdrhook::cli {

// One event a journal still holds (a cell not yet released: its line may
// or may not be in the log), with its strings and its wall time resolved.
struct JournalEvent {
    Event event; // seq is the event's place in the queue
    uint64_t realtime_ns = 0;
    std::string api, msg, backend; // what event.api, .msg, .backend point at
    bool has_msg = false, has_backend = false;
};

// What a journal file says (cache/events/journal_layout.h).
struct JournalContents {
    JournalHeader header{};
    std::vector<JournalEvent> events; // in the order they were recorded
    uint64_t placeholders = 0;        // events handed over whole: written by their thread
};

// Reads the journal open at `fd` into `out` (its header holds atomics,
// so it is filled in place, not answered). Fails with why it is not a
// journal this tool can read (never made whole, another version, cut
// short); `out.header` then holds what was read, whose magic says whether
// the file is gdrhook's.
Result<void> read_journal(int fd, JournalContents &out);

// Whether the journal was made on this machine since it last booted (the
// process's pid and the event clock then mean something here).
bool made_on_this_boot(const JournalHeader &header);

} // namespace gdrhook::cli
