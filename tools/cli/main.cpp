// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// gdrhook: the command-line tool. Each room declares its own command and
// its options (with CLI11: run/run_subcommand.h, log/log_subcommands.h,
// doctor/, node/, epilog/); this file only gathers them and dispatches.
// CLI11 reports bad arguments by throwing; those exceptions, and any other,
// stop here so the process always ends with a status and a message.
#include "command/command.h"
#include "command/exit_code.h"
#include "doctor/doctor_subcommand.h"
#include "epilog/epilog_subcommand.h"
#include "log/log_subcommands.h"
#include "node/node_subcommand.h"
#include "run/run_subcommand.h"
#include "terminal/terminal_stream.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

using namespace gdrhook::cli;

namespace {

// The first line is the package's version, alone (scripts compare it);
// the second the Slurm release the plugin was built for, where it was
// built: slurmd loads a plugin of its own major.minor release only.
std::string version_text()
{
    std::string text = std::string("gdrhook ") + GDRHOOK_VERSION;
    const std::string slurm = GDRHOOK_SLURM_VERSION;
    if (!slurm.empty())
        text += "\nSlurm plugin built for Slurm " + slurm + " (slurmd " +
                slurm.substr(0, slurm.rfind('.')) + ".x loads it, no other release)";
    return text;
}

// Each room adds its own command (command/command.h); this parses the
// words and runs the one given.
int dispatch(int argc, char **argv)
{
    CLI::App app{"gdrhook: run CUDA programs under the gdrhook shim, and read its event logs",
                 "gdrhook"};
    app.set_version_flag("--version", version_text());
    app.require_subcommand(1);
    app.footer(exit_footer);

    std::vector<Command> commands{add_run(app)};
    for (Command &log : add_log(app))
        commands.push_back(std::move(log));
    commands.push_back(add_doctor(app));
    commands.push_back(add_node(app));
    commands.push_back(add_epilog(app));

    const CommandLine line{argc, argv, run_words_end(argc, argv)};
    try {
        app.parse(line.parsed, argv);
    } catch (const CLI::ParseError &error) {
        int code = app.exit(error);
        return code == 0 ? exit_ok : exit_input;
    }
    for (const Command &command : commands)
        if (command.app->parsed())
            return command.run(line);
    return exit_input;
}

} // namespace

int main(int argc, char **argv)
{
    // Whatever any command prints, bytes of logs, of /proc and of file
    // names among it, reaches the terminal escaped.
    TerminalStreams terminal;
    try {
        const int status = dispatch(argc, argv);
        // What a command printed must have reached its reader (a full
        // disk, a closed pipe): a lost report is an error.
        if (!std::cout.flush()) {
            std::cerr << "gdrhook: cannot write the output: " << std::strerror(errno) << '\n';
            return status == exit_ok ? exit_input : status;
        }
        return status;
    } catch (const std::exception &error) {
        std::cerr << "gdrhook: internal error: " << error.what() << '\n';
    } catch (...) {
        std::cerr << "gdrhook: internal error\n";
    }
    return 70; // EX_SOFTWARE
}
