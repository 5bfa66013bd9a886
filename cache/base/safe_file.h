// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The one way gdrhook opens, creates and replaces a file, in the shim and
// in the tool alike (tests/docs/check_file_access.py fails on any other).
// gdrhook's files live in shared folders (/tmp, a job's folder, a
// node-exporter's textfile folder), where another user can plant a
// symbolic link, a hard link, a FIFO, a device or a file of their own at
// the name gdrhook opens. So every open here:
//   - follows no symbolic link at the last component (O_NOFOLLOW),
//   - never blocks (O_NONBLOCK, cleared once the file is known regular),
//   - is close-on-exec (O_CLOEXEC), so no program gdrhook starts gets it,
//   - checks what it opened, after the open (fstat): a regular file, of
//     the owner asked for; a check before the open could be answered by
//     one file and the open by another.
// Anything else is refused with a reason (docs/design.md, "Files and
// descriptors").
#pragma once

#include "cache/base/result.h"
#include "cache/base/unique_fd.h"

#include <string>
#include <sys/types.h>

namespace gdrhook {

// Who may own a file gdrhook opens.
class Owner {
public:
    // Any user: files of the system (/proc, /sys), which the kernel owns
    // under the names it chooses, and logs read for a report (whoever may
    // read them may report on them).
    static Owner anyone() { return Owner(any_uid, false); }
    // Exactly `uid`: a file gdrhook writes to on behalf of that user.
    static Owner is(uid_t uid) { return Owner(uid, false); }
    // The effective uid, or root: a file the caller replaces (a root-owned
    // metrics file is replaced by root, never another user's).
    static Owner me_or_root();
    bool allows(uid_t uid) const;

private:
    static constexpr uid_t any_uid = static_cast<uid_t>(-1);
    Owner(uid_t uid, bool root_too) : uid_(uid), root_too_(root_too) {}
    uid_t uid_;
    bool root_too_;
};

// What an open gave: the descriptor, owned (closed when it goes, or
// handed on by moving `fd`), and whether this open made the file.
struct OpenFile {
    UniqueFd fd;
    bool created = false;
};

// The descriptor, or why there is none: a refusal (StatusCode::refused)
// or a failed open (io_error, its errno). why() follows the file's name:
// "is a symbolic link", "is owned by another user", "cannot be opened
// (...)".
using OpenedFile = Result<OpenFile>;

// Opens `name`, relative to the folder open at `dir` (AT_FDCWD: the
// current one), in append mode; write-only, or read-write with
// `readable` (recovery reads the log's end). `create`: make it (mode
// `mode`, less the umask) when there is none. A log is only ever a
// regular file with one name, owned by `owner`, or a new file made by
// this open (O_EXCL).
OpenedFile open_for_append(int dir, const char *name, Owner owner, bool create, mode_t mode,
                           bool readable = false);

// Opens `name` to read: a regular file of `owner`; with `one_name`, one
// that has no other names (a log; a hard link planted where
// fs.protected_hardlinks is 0 names somebody else's file).
OpenedFile open_for_reading(int dir, const char *name, Owner owner, bool one_name = false);

// Opens `name` read-write, a regular file of `owner` (a journal the tool
// recovers and removes).
OpenedFile open_for_update(int dir, const char *name, Owner owner);

// Makes `name`, which must not exist (O_EXCL), read-write.
OpenedFile create_exclusive(int dir, const char *name, mode_t mode);

// Makes a file without a name in the folder `folder` (O_TMPFILE), to be
// linked at a name once it is whole; fails where the file system cannot.
OpenedFile create_unnamed(const char *folder, mode_t mode);

// Gives the unnamed file open at `fd` (create_unnamed) the name `path`;
// never replaces a file there (EEXIST).
bool name_unnamed(int fd, const char *path);

// Who chose a folder's name: gdrhook (/proc/self/fd), where a symbolic
// link is refused, or the user (the folder of a log or of a metrics file),
// who may name it through a link as every folder above it.
enum class FolderName { fixed, named_by_user };

// Opens the folder `name` to list it or to open files in it.
OpenedFile open_folder(int dir, const char *name, FolderName chosen = FolderName::fixed);

// Makes the folder `name` in the folder open at `dir` (mode `mode`, less
// the umask), or opens the one there: a folder of `owner`, never a link
// (a job's log folder, made by its user where every user makes theirs).
OpenedFile make_folder(int dir, const char *name, mode_t mode, Owner owner);

// Opens a character device (/dev/gdrhook) read-write, without blocking:
// a device owned by root, never a file planted at its name.
OpenedFile open_device(const char *path);

// Reads at most `limit` bytes of a small regular file (/proc, /sys). A
// read that fails part way keeps what it read before (a process that
// exits while its /proc files are read).
Result<std::string> read_small_file(const char *path, size_t limit = 64 * 1024);

// The mode of a file gdrhook makes at `path` for its user (a log, a
// journal, a verdict): 0600, its user's alone, since it holds the
// program's command line and what it did; 0640 where the folder is
// set-group-ID and its group may read it, which is how a site hands a
// folder's files to a group of readers (the Slurm plugin's group=).
mode_t private_file_mode(const std::string &path);

// Replaces `path` whole with `text`: written to a new file of a random
// name in the same folder (O_EXCL), synced, then renamed over `path`, so
// that a reader sees the old file or the new one, never half of one.
// Refused where `path` is a symbolic link, not a regular file or owned by
// another user than the caller or root.
Result<void> replace_by_rename(const std::string &path, const std::string &text, mode_t mode);

} // namespace gdrhook
