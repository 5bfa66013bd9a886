// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "run/run_subcommand.h"

#include "command/exit_code.h"
#include "run/run_command.h"

#include "cache/base/config.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string_view>

namespace gdrhook::cli {

namespace {

// The options that set a GDRHOOK_* variable, in the order --help lists
// them: each accepts what the variable does (setting_values()), and the
// variable is set for the program only where the option is given.
struct SettingOption {
    const char *name;
    const char *variable;
    const char *help;
    const char *type_name; // nullptr: CLI11's own (TEXT, or the choices)
    bool flag = false;     // no value: the variable is set to 1
};
constexpr SettingOption setting_options[] = {
    {"--backend", "GDRHOOK_BACKEND", "pinning backend (GDRHOOK_BACKEND)", nullptr},
    {"--pin", "GDRHOOK_PIN", "pin policy (GDRHOOK_PIN)", nullptr},
    {"--verify", "GDRHOOK_VERIFY", "cross-check every cache hit with the driver (GDRHOOK_VERIFY=1)",
     nullptr, true},
    {"--sample-ms", "GDRHOOK_SAMPLE_MS",
     "log each process's RSS, open fds and pins every MS milliseconds, for `log timeline`", "MS"},
    {"--log-level", "GDRHOOK_LOG_LEVEL", "shim messages on stderr (GDRHOOK_LOG_LEVEL)", nullptr},
};

// The check of an option that sets the GDRHOOK_* variable `name`: the
// settings table's own reading of the variable (cache/base/config.h), so
// the option accepts exactly what the variable does; its help lists the
// table's words where the variable takes one of a list.
CLI::Validator setting_values(const char *name)
{
    const gdrhook::ConfigVariable *variable = gdrhook::find_config_variable(name);
    if (!variable)
        throw std::logic_error(std::string("no setting ") + name);
    std::string words;
    for (const gdrhook::ChoiceWord &choice : variable->choices)
        words += (words.empty() ? "" : ",") + std::string(choice.word);
    return CLI::Validator(
        [variable](std::string &value) {
            gdrhook::Config scratch;
            gdrhook::Diagnostics said;
            gdrhook::ParseContext context;
            variable->parse(*variable, value.c_str(), context, scratch, said);
            return said.empty() ? std::string() : said.front();
        },
        words.empty() ? std::string() : "{" + words + "}");
}

// An option's help; one whose variable takes a number says, from the
// settings table, which (the table's words, less their backticks).
std::string setting_help(const SettingOption &setting)
{
    const gdrhook::ConfigVariable *variable = gdrhook::find_config_variable(setting.variable);
    if (setting.flag || !variable || variable->choices.count)
        return setting.help;
    std::string accepted = gdrhook::accepted_text(*variable);
    accepted.erase(std::remove(accepted.begin(), accepted.end(), '`'), accepted.end());
    return std::string(setting.help) + " (" + setting.variable + ": " + accepted + ")";
}

// Whether CLI11 left an option gdrhook run does not know among the words
// it gives the program (of the `parsed` words of argv): they are then not
// the words that end them, or the first is an option.
bool holds_an_unknown_option(int parsed, char **argv, const std::vector<std::string> &program)
{
    const size_t words = program.size();
    if (words == 0)
        return false;
    if (words + 2 > static_cast<size_t>(parsed)) // gdrhook run, then the words
        return true;
    char **tail = argv + (parsed - static_cast<int>(words));
    if (!std::equal(program.begin(), program.end(), tail))
        return true;
    const std::string_view first = tail[0];
    return first.size() > 1 && first[0] == '-';
}

struct RunArguments {
    RunOptions options;
    bool no_summary = false;
};

int run_parsed(CLI::App &run, RunArguments &arguments, const CommandLine &line)
{
    RunOptions &options = arguments.options;
    // prefix_command leaves the program's name and every word after it (up
    // to the first `--`) unparsed, in order; an option gdrhook run does not
    // know is left there too, where the program's name should be.
    options.command = run.remaining();
    if (holds_an_unknown_option(line.parsed, line.argv, options.command)) {
        std::cerr << "gdrhook run: unknown option " << options.command.front()
                  << " (a program whose name starts with '-' follows --)\n"
                     "Run with --help for more information.\n";
        return exit_input;
    }
    // After the first `--`: the program, if its name did not come before;
    // else the rest of its words, that `--` included.
    const int rest = line.parsed == line.argc  ? line.argc
                     : options.command.empty() ? line.parsed + 1
                                               : line.parsed;
    options.command.insert(options.command.end(), line.argv + rest, line.argv + line.argc);
    if (options.command.empty()) {
        std::cerr << "gdrhook run: no program given (the command to run follows the options, "
                     "or --)\n"
                     "Run with --help for more information.\n";
        return exit_input;
    }
    options.summary = !arguments.no_summary;
    return run_program(options, std::cerr);
}

} // namespace

int run_words_end(int argc, char **argv)
{
    if (argc < 2 || std::string_view(argv[1]) != "run")
        return argc;
    for (int i = 2; i < argc; ++i)
        if (std::string_view(argv[i]) == "--")
            return i;
    return argc;
}

Command add_run(CLI::App &app)
{
    auto arguments = std::make_shared<RunArguments>();
    RunOptions &options = arguments->options;
    CLI::App *run = app.add_subcommand(
        "run", "run a program under the shim (LD_PRELOAD), pass its exit status through, "
               "and summarize its events");
    run->footer("Usage: gdrhook run [OPTIONS] [--] PROGRAM [ARGS...]: as with env or timeout, "
                "every word from PROGRAM on is the program's; it inherits gdrhook run's signal "
                "dispositions and mask (SIGCHLD at its default).\n"
                "Example: gdrhook run --pin alloc --backend dmabuf -- python3 train.py\n"
                "Exit status: the program's; 128+N if it was killed by signal N; as env: 127 if "
                "it or libgdrhook.so cannot be found, 126 if it exists but cannot be executed "
                "(no execute permission, a folder).");
    run->add_option("--events", options.events,
                    "event log path: %p pid, %h host, %r rank (default: ./gdrhook-<pid>.%p.jsonl)");
    for (const SettingOption &setting : setting_options) {
        std::string &value = options.settings[setting.variable];
        if (setting.flag) {
            run->add_flag_callback(
                setting.name, [&value] { value = "1"; }, setting.help);
            continue;
        }
        CLI::Option *option = run->add_option(setting.name, value, setting_help(setting))
                                  ->check(setting_values(setting.variable));
        if (setting.type_name)
            option->type_name(setting.type_name);
    }
    run->add_option(
        "--library", options.library,
        "libgdrhook.so to preload (default: GDRHOOK_LIBRARY, else found next to gdrhook)");
    run->add_flag("--no-summary", arguments->no_summary,
                  "do not print the summary when the program ends");
    // `gdrhook run [OPTIONS] [--] PROGRAM ARGS...`, as env, timeout and
    // nohup read theirs: options only before the program's name; from it
    // on every word is the program's, a `--` of its own included.
    run->prefix_command();
    return {run, [run, arguments](const CommandLine &line) {
                return run_parsed(*run, *arguments, line);
            }};
}

} // namespace gdrhook::cli
