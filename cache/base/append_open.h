// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// How gdrhook opens a log it appends to, as the shim (the event log) and
// as the tool (a log it recovers into). Logs live in shared folders (/tmp,
// a job's folder), where another user can plant a symbolic link, a hard
// link, a FIFO or a file of their own at the name gdrhook will write. So a
// log is only ever:
//   - a regular file with one name, owned by `owner`, opened without
//     following a symbolic link and without blocking, or
//   - a new file made by this open (O_EXCL).
// Anything else is refused with a reason (docs/design.md, "Files and
// descriptors").
#pragma once

#include <string>
#include <sys/types.h>

namespace gdrhook {

struct AppendOpen {
    int fd = -1;          // -1: refused or failed, see `why`
    bool created = false; // the file was made by this open
    std::string why; // "is a symbolic link", "is owned by another user", "cannot be opened (...)"
    int error = 0;   // the errno where the open failed, 0 where it refused
};

// Opens `name`, relative to the folder open at `dir` (AT_FDCWD: the
// current one), in append mode, close-on-exec; write-only, or read-write
// with `readable` (recovery reads the log's end). `create`: make it (mode
// `mode`, less the umask) when there is none.
AppendOpen open_for_append(int dir, const char *name, uid_t owner, bool create, mode_t mode,
                           bool readable = false);

} // namespace gdrhook
