// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "install/library_locator.h"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

// Set by tools/cli/meson.build from the install layout; the fallbacks
// cover the layouts Debian and other distributions use.
#ifndef GDRHOOK_INSTALL_BINDIR
#define GDRHOOK_INSTALL_BINDIR "bin"
#endif
#ifndef GDRHOOK_INSTALL_LIBDIR
#define GDRHOOK_INSTALL_LIBDIR "lib"
#endif

namespace gdrhook::cli {

namespace {

constexpr const char *library_name = "libgdrhook.so";

// Debian's multiarch directory for this machine's architecture.
#if defined(__x86_64__)
constexpr const char *multiarch_libdir = "../lib/x86_64-linux-gnu";
#elif defined(__aarch64__)
constexpr const char *multiarch_libdir = "../lib/aarch64-linux-gnu";
#else
#error "gdrhook supports x86-64 and aarch64 (tools/cli/install/library_locator.cpp)"
#endif

// "../lib/x86_64-linux-gnu" from "bin" and "lib/x86_64-linux-gnu"; the
// libdir itself when it is absolute.
std::string installed_relative_libdir()
{
    std::string libdir = GDRHOOK_INSTALL_LIBDIR;
    if (!libdir.empty() && libdir[0] == '/')
        return libdir;
    std::string bindir = GDRHOOK_INSTALL_BINDIR;
    std::string up;
    size_t depth =
        bindir.empty() ? 0 : 1 + static_cast<size_t>(std::count(bindir.begin(), bindir.end(), '/'));
    for (size_t i = 0; i < depth; ++i)
        up += "../";
    return up + libdir;
}

bool is_file(const std::string &path)
{
    return access(path.c_str(), R_OK) == 0;
}

} // namespace

std::vector<std::string> library_candidates(const std::string &exe_dir,
                                            const std::string &explicit_path)
{
    if (!explicit_path.empty())
        return {explicit_path};
    std::vector<std::string> candidates;
    auto add = [&](const std::string &dir) {
        std::string path = (dir[0] == '/' ? dir : exe_dir + "/" + dir) + "/" + library_name;
        if (std::find(candidates.begin(), candidates.end(), path) == candidates.end())
            candidates.push_back(path);
    };
    if (exe_dir.empty())
        return candidates;
    add("../hook");
    add(installed_relative_libdir());
    add(multiarch_libdir);
    add("../lib64");
    add("../lib");
    return candidates;
}

std::string find_library(const std::string &exe_dir, const std::string &explicit_path,
                         std::vector<std::string> &tried)
{
    tried = library_candidates(exe_dir, explicit_path);
    for (const std::string &path : tried) {
        if (is_file(path)) {
            // LD_PRELOAD wants an absolute path: the program may chdir, and
            // a relative one would be searched in the library path instead.
            char resolved[PATH_MAX];
            if (realpath(path.c_str(), resolved))
                return resolved;
            return path;
        }
    }
    return {};
}

std::string executable_dir()
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0)
        return {};
    std::string exe(path, static_cast<size_t>(n));
    size_t slash = exe.rfind('/');
    return slash == std::string::npos ? std::string(".") : exe.substr(0, slash);
}

std::string named_library(const std::string &option)
{
    if (!option.empty())
        return option;
    const char *env = std::getenv("GDRHOOK_LIBRARY");
    return env ? env : "";
}

std::string find_shim(const std::string &option, std::vector<std::string> &tried)
{
    return find_library(executable_dir(), named_library(option), tried);
}

} // namespace gdrhook::cli
