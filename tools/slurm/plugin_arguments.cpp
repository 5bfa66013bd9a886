// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "tools/slurm/plugin_arguments.h"

#include <grp.h>
#include <pwd.h>

#include <cstring>

namespace gdrhook::slurm {
namespace {

// What `value` says for the argument `name`; "" or what is wrong.
std::string read_one(const std::string &name, const std::string &value, PluginArguments &into)
{
    if (name == "default")
        into.default_mode = value;
    else if (name == "logdir")
        into.log_tree.root = value;
    else if (name == "library")
        into.library = value;
    else if (name == "gdrhook")
        into.tool = value;
    else if (name == "proc")
        into.proc_root = value;
    else if (name == "sys")
        into.sys_root = value;
    else if (name == "owner") {
        const passwd *pw = getpwnam(value.c_str());
        if (!pw)
            return "owner=" + value + ": no such user";
        into.log_tree.root_owner = pw->pw_uid;
    } else if (name == "group") {
        const group *gr = getgrnam(value.c_str());
        if (!gr)
            return "group=" + value + ": no such group";
        into.log_tree.has_readers = true;
        into.log_tree.readers = gr->gr_gid;
    } else if (name == "timeout") {
        // Seconds, 1 to a day: an epilog reads /proc and the step's logs.
        char *end = nullptr;
        const long seconds = std::strtol(value.c_str(), &end, 10);
        if (value.empty() || *end || seconds < 1 || seconds > 86400)
            return "timeout=" + value + ": not a number of seconds from 1 to 86400";
        into.epilog_seconds = static_cast<int>(seconds);
    } else {
        return "unknown argument '" + name + "=" + value +
               "' (known: default= logdir= owner= group= timeout= library= gdrhook= proc= sys=)";
    }
    return "";
}

} // namespace

std::string read_plugin_arguments(int ac, char **av, PluginArguments &arguments)
{
    for (int i = 0; i < ac; i++) {
        const char *equals = std::strchr(av[i], '=');
        if (!equals)
            return std::string("unknown argument '") + av[i] + "'";
        if (std::string why = read_one(std::string(av[i], static_cast<size_t>(equals - av[i])),
                                       equals + 1, arguments);
            !why.empty())
            return why;
    }
    return "";
}

} // namespace gdrhook::slurm
