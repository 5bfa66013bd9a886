// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/core/start_folder.h"

#include <climits>
#include <unistd.h>

namespace gdrhook {
namespace {

// Read by a constructor, when the loader maps the shim: before the
// program's main, so before it can change folder. A fixed buffer: nothing
// is allocated this early.
char start_folder[PATH_MAX];
bool start_folder_known = false;

__attribute__((constructor)) void remember_start_folder()
{
    start_folder_known = getcwd(start_folder, sizeof start_folder) != nullptr;
}

} // namespace

std::string absolute_from_start(const std::string &path)
{
    if (path.empty() || path[0] == '/')
        return path;
    // Unknown at load (a folder removed, or deeper than PATH_MAX): the
    // folder now is the best left.
    char now[PATH_MAX];
    const char *folder = start_folder_known ? start_folder : getcwd(now, sizeof now);
    if (!folder)
        return path;
    const std::string base(folder);
    return base == "/" ? "/" + path : base + "/" + path;
}

} // namespace gdrhook
