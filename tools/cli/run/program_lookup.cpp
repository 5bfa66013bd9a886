// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "run/program_lookup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gdrhook::cli {

namespace {

constexpr int not_found = 127;
constexpr int cannot_execute = 126;

// Where execvp looks when PATH is unset.
constexpr char default_search_path[] = "/bin:/usr/bin";

// The one file `path`: runnable, or why not.
ProgramLookup look_at(const std::string &path)
{
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
        // env: only a name that is not there at all is "not found".
        const int error = errno;
        return {error == ENOENT ? not_found : cannot_execute,
                std::string("it cannot be found (") + std::strerror(error) + ")"};
    }
    if (S_ISDIR(st.st_mode))
        return {cannot_execute, "it is a folder"};
    if (!S_ISREG(st.st_mode))
        return {cannot_execute, "it is not a regular file"};
    // The effective ids, as execve judges them (root needs an x bit too).
    if (faccessat(AT_FDCWD, path.c_str(), X_OK, AT_EACCESS) != 0)
        return {cannot_execute, "it has no execute permission"};
    return {};
}

} // namespace

ProgramLookup look_up_program(const std::string &name, const char *search_path)
{
    if (name.empty())
        return {not_found, "an empty name is no program"};
    if (name.find('/') != std::string::npos)
        return look_at(name);
    const std::string folders = search_path ? search_path : default_search_path;
    // The first that can run wins; else what was wrong with the first of
    // that name that exists, as execvp reports EACCES after its search.
    ProgramLookup found_unrunnable;
    size_t start = 0;
    while (start <= folders.size()) {
        size_t end = folders.find(':', start);
        if (end == std::string::npos)
            end = folders.size();
        const std::string folder = folders.substr(start, end - start);
        start = end + 1;
        // An empty folder in PATH is the current one; a folder without
        // the name (or no folder at all) is passed over, as execvp does.
        const std::string candidate = (folder.empty() ? "." : folder) + "/" + name;
        struct stat st;
        if (stat(candidate.c_str(), &st) != 0)
            continue;
        const ProgramLookup here = look_at(candidate);
        if (here.exit_status == 0)
            return here;
        if (found_unrunnable.exit_status == 0)
            found_unrunnable = here;
    }
    if (found_unrunnable.exit_status != 0)
        return found_unrunnable;
    return {not_found, "not found in PATH"};
}

} // namespace gdrhook::cli
