// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include <cstdint>

namespace gdrhook::cli {

// What the end of a log says about one process, read backwards from the
// end until it is known: which of its recorded events are written
// already, and whether its death was recorded.
struct ProcessTail {
    bool died = false;             // a `died` line (recovered before)
    bool wrote_positioned = false; // a line whose seq is its queue position
    uint64_t last_position = 0;    // ... the highest such seq
    uint64_t last_seq = 0;         // of its last line of any kind
    uint64_t last_ts_ns = 0;       // 0: no line of it
};

// Scans the log open at `fd` for process `pid`, considering only lines
// stamped at `since_ns` or later (earlier ones are another process that
// had the pid, or the program it replaced by exec).
ProcessTail scan_process_tail(int fd, int pid, uint64_t since_ns);

// A process killed inside write(2) can leave its last line cut short. If
// the log ends inside a line of `pid`, that line is cut off (the event is
// still in its journal) and true is returned; false if the log ends with a
// whole line, or inside another process's line, left as it is.
bool cut_torn_line_of(int fd, int pid);

} // namespace gdrhook::cli
