// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The mark the shim leaves as the loader maps it, where the Slurm plugin
// asks for one (GDRHOOK_LOAD_MARKS, a file beside the step's logs): one
// line per process, its mount namespace and its program,
//   mnt:[4026531840] python3
// A step's processes that made CUDA calls under the shim leave logs; a
// step whose processes could not load it (a container without the shim,
// where the loader says "cannot be preloaded" and goes on) leaves none, no
// more than a step that made no CUDA call. The marks tell the two apart,
// and name the container runtimes that loaded the shim while nothing in
// their containers did (`gdrhook epilog --load-marks`).
#include "cache/base/config.h"
#include "cache/base/safe_file.h"
#include "cache/base/unique_fd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace gdrhook {
namespace {

// Past this size the file takes no more lines: a step that starts a
// million short processes marks it no bigger.
constexpr off_t marks_cap = 64 * 1024;

// The target of the link `path`, into `buffer`; "?" where unreadable.
const char *link_target(const char *path, char *buffer, size_t size)
{
    const ssize_t length = readlink(path, buffer, size - 1);
    if (length <= 0)
        return "?";
    buffer[length] = '\0';
    return buffer;
}

// Read by a constructor, when the loader maps the shim, before any CUDA
// call: fixed buffers, one line written at once (O_APPEND), so lines of
// processes that start together do not mix. Nothing is said on failure:
// a mark that cannot be written is what the epilog reads as a process
// that did not load the shim.
__attribute__((constructor)) void leave_load_mark()
{
    const char *path = getenv(load_marks_variable);
    if (!path || path[0] != '/')
        return;
    OpenedFile file = open_for_append(AT_FDCWD, path, Owner::is(geteuid()), true, 0600);
    if (!file)
        return;
    UniqueFd held = std::move(file->fd);
    struct stat st {};
    if (fstat(held.get(), &st) != 0 || st.st_size >= marks_cap)
        return;
    char ns[64], exe[4096], line[4200];
    const char *program = link_target("/proc/self/exe", exe, sizeof exe);
    if (const char *slash = strrchr(program, '/'))
        program = slash + 1;
    const int length = snprintf(line, sizeof line, "%s %s\n",
                                link_target("/proc/self/ns/mnt", ns, sizeof ns), program);
    if (length > 0 && static_cast<size_t>(length) < sizeof line) {
        const ssize_t written = write(held.get(), line, static_cast<size_t>(length));
        (void)written;
    }
}

} // namespace
} // namespace gdrhook
