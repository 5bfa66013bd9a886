// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "tools/slurm/plugin_arguments.h"

#include "cache/base/config.h"

#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <utility>
#include <vector>

namespace gdrhook::slurm {
namespace {

// The variable a mode other than on and off sets for the job's tasks.
constexpr const char *mode_variable = "GDRHOOK_PIN";

Status wrong()
{
    return Status::error(StatusCode::invalid, 0, "plugin argument");
}

} // namespace

Result<std::string> check_mode(const std::string &given)
{
    std::string mode = given;
    std::transform(mode.begin(), mode.end(), mode.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::vector<std::string> words = {"on", "off"};
    const ConfigVariable *variable = find_config_variable(mode_variable);
    for (const ChoiceWord &choice : variable->choices)
        if (std::find(words.begin(), words.end(), choice.word) == words.end())
            words.push_back(choice.word);
    if (std::find(words.begin(), words.end(), mode) != words.end())
        return mode;
    std::string accepted;
    for (size_t i = 0; i < words.size(); ++i)
        accepted += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
    return Result<std::string>::failure(wrong(), "is not a mode: expected " + accepted,
                                        std::move(mode));
}

namespace {

// What `value` says for the argument `name`; fails with what is wrong.
Result<void> read_one(const std::string &name, const std::string &value, PluginArguments &into)
{
    if (name == "default") {
        const Result<std::string> mode = check_mode(value);
        into.default_mode = *mode;
        if (!mode)
            return Result<void>::failure(wrong(), "default=" + value + " " + mode.why());
    } else if (name == "logdir")
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
            return Result<void>::failure(wrong(), "owner=" + value + ": no such user");
        into.log_tree.root_owner = pw->pw_uid;
    } else if (name == "group") {
        const group *gr = getgrnam(value.c_str());
        if (!gr)
            return Result<void>::failure(wrong(), "group=" + value + ": no such group");
        into.log_tree.has_readers = true;
        into.log_tree.readers = gr->gr_gid;
    } else if (name == "timeout") {
        // Seconds, 1 to a day: an epilog reads /proc and the step's logs.
        char *end = nullptr;
        const long seconds = std::strtol(value.c_str(), &end, 10);
        if (value.empty() || *end || seconds < 1 || seconds > 86400)
            return Result<void>::failure(wrong(), "timeout=" + value +
                                                      ": not a number of seconds from 1 to 86400");
        into.epilog_seconds = static_cast<int>(seconds);
    } else {
        return Result<void>::failure(wrong(), "unknown argument '" + name + "=" + value +
                                                  "' (known: default= logdir= owner= group= "
                                                  "timeout= library= gdrhook= proc= sys=)");
    }
    return {};
}

} // namespace

Result<void> read_plugin_arguments(int ac, char **av, PluginArguments &arguments)
{
    // Read into a copy, taken whole or not at all: a line refused for its
    // last argument must not leave its first ones (default=on) in force.
    PluginArguments taken = arguments;
    for (int i = 0; i < ac; i++) {
        const char *equals = std::strchr(av[i], '=');
        if (!equals)
            return Result<void>::failure(wrong(), std::string("unknown argument '") + av[i] + "'");
        if (Result<void> read = read_one(std::string(av[i], static_cast<size_t>(equals - av[i])),
                                         equals + 1, taken);
            !read)
            return read;
    }
    arguments = std::move(taken);
    return {};
}

} // namespace gdrhook::slurm
