// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// gdrhook: the command-line tool. This file only declares the commands and
// their options (with CLI11) and dispatches; each command lives in its own
// file. CLI11 reports bad arguments by throwing; those exceptions, and any
// other, stop here so the process always ends with a status and a message.
#include "cache/base/config.h"
#include "doctor/doctor.h"
#include "epilog/epilog_command.h"
#include "exit_code.h"
#include "log_commands.h"
#include "node/node_command.h"
#include "recover/log_recovery.h"
#include "run/run_command.h"
#include "terminal/terminal_stream.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string_view>

using namespace gdrhook::cli;

namespace {

const char *const exit_footer =
    "\nExit status: 0 success; 1 problems found (log check, doctor); 2 bad arguments, "
    "unreadable files or malformed log lines.";

// --proc and --sys: where a command that reads the machine finds them.
void add_machine_roots(CLI::App *command, std::string &proc_root, std::string &sys_root)
{
    command->add_option("--proc", proc_root, "where /proc is (tests, containers)")
        ->capture_default_str();
    command->add_option("--sys", sys_root, "where /sys is (tests, containers)")
        ->capture_default_str();
}

void add_files(CLI::App *command, std::vector<std::string> &files)
{
    command->add_option("files", files, "event logs (JSON Lines), one per process; merged by time")
        ->required();
}

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
    for (const char *word : variable->choices)
        words += (words.empty() ? "" : ",") + std::string(word);
    return CLI::Validator(
        [variable](std::string &value) {
            gdrhook::Config scratch;
            gdrhook::Diagnostics said;
            gdrhook::ParseContext context;
            variable->parse(variable->name, value.c_str(), context, scratch, said);
            return said.empty() ? std::string() : said.front();
        },
        words.empty() ? std::string() : "{" + words + "}");
}

// Where gdrhook run's own words end: at its first `--`, if any. CLI11
// parses only what comes before (a `--` inside a subcommand would hand
// what follows to the top-level parser).
int before_first_dashes(int argc, char **argv)
{
    if (argc < 2 || std::string_view(argv[1]) != "run")
        return argc;
    for (int i = 2; i < argc; ++i)
        if (std::string_view(argv[i]) == "--")
            return i;
    return argc;
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

int dispatch(int argc, char **argv)
{
    CLI::App app{"gdrhook: run CUDA programs under the gdrhook shim, and read its event logs",
                 "gdrhook"};
    app.set_version_flag("--version", version_text());
    app.require_subcommand(1);
    app.footer(exit_footer);

    RunOptions run_options;
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
    run->add_option("--events", run_options.events,
                    "event log path: %p pid, %h host, %r rank (default: ./gdrhook-<pid>.%p.jsonl)");
    run->add_option("--backend", run_options.backend, "pinning backend (GDRHOOK_BACKEND)")
        ->check(setting_values("GDRHOOK_BACKEND"));
    run->add_option("--pin", run_options.pin, "pin policy (GDRHOOK_PIN)")
        ->check(setting_values("GDRHOOK_PIN"));
    run->add_flag("--verify", run_options.verify,
                  "cross-check every cache hit with the driver (GDRHOOK_VERIFY=1)");
    run->add_option("--sample-ms", run_options.sample_ms,
                    "log each process's RSS, open fds and pins every MS milliseconds, for "
                    "`log timeline` (GDRHOOK_SAMPLE_MS; 0 or 10 to 3600000)")
        ->type_name("MS")
        ->check(setting_values("GDRHOOK_SAMPLE_MS"));
    run->add_option("--log-level", run_options.log_level,
                    "shim messages on stderr (GDRHOOK_LOG_LEVEL)")
        ->check(setting_values("GDRHOOK_LOG_LEVEL"));
    run->add_option(
        "--library", run_options.library,
        "libgdrhook.so to preload (default: GDRHOOK_LIBRARY, else found next to gdrhook)");
    bool no_summary = false;
    run->add_flag("--no-summary", no_summary, "do not print the summary when the program ends");
    // `gdrhook run [OPTIONS] [--] PROGRAM ARGS...`, as env, timeout and
    // nohup read theirs: options only before the program's name; from
    // it on every word is the program's, a `--` of its own included.
    run->prefix_command();

    CLI::App *log = app.add_subcommand("log", "read event logs written by the shim");
    log->require_subcommand(1);
    log->footer(exit_footer);

    LogOptions log_options;
    CLI::App *summary = log->add_subcommand(
        "summary", "events by kind and API, live and pinned memory (peaks), unpin delay "
                   "percentiles, errors");
    add_files(summary, log_options.files);
    summary->add_flag("--json", log_options.json, "print one JSON object instead of text");
    summary
        ->add_option("--threads", log_options.threads,
                     "threads that parse the logs ahead of the one that sums them up; 0: that "
                     "one alone (default: one less than the CPUs gdrhook may run on, at most 8; a "
                     "single file is parsed by that one)")
        ->type_name("N")
        ->capture_default_str()
        ->check(CLI::Range(0, static_cast<int>(max_parse_threads)));
    summary->footer(exit_footer);

    CLI::App *check = log->add_subcommand(
        "check", "fail unless every pin was unpinned (after its revocation, if revoked), no "
                 "pinned memory was freed without an unpin, verify mode found nothing and no "
                 "error event was logged (for CI)");
    add_files(check, log_options.files);
    check
        ->add_option("--allow", log_options.allow,
                     "problems you expect, counted but not failing the check (repeatable): "
                     "error (any error event that is not a verify finding), error:TEXT (those "
                     "whose msg starts with TEXT), never-unpinned, freed-while-pinned, "
                     "verify-finding, double-release, pin-replaced, revoked-never-unpinned, "
                     "events-lost, log-capped")
        ->type_name("KIND")
        ->allow_extra_args(false) // one value per --allow; the files follow
        ->check([](const std::string &value) {
            CheckOptions scratch;
            return add_allowance(scratch, value) ? std::string()
                                                 : "unknown problem kind '" + value + "'";
        });
    check->footer(exit_footer);

    CLI::App *timeline = log->add_subcommand(
        "timeline", "plot pinned and live GPU memory over time, per process, as SVG (and "
                    "each process's RSS and open fds where the log has samples)");
    add_files(timeline, log_options.files);
    timeline->add_option("-o,--output", log_options.output, "the SVG file to write")->required();
    timeline->footer(exit_footer);

    std::vector<std::string> recover_files;
    CLI::App *recover = log->add_subcommand(
        "recover", "turn what processes that ended without writing their logs (killed, "
                   "crashed) left in their journals into log lines; summary, check, timeline "
                   "and run do this by themselves");
    add_files(recover, recover_files);
    recover->footer(exit_footer);

    DoctorOptions doctor_options;
    CLI::App *doctor = app.add_subcommand(
        "doctor", "check the machine: driver, GPUs and their DMA-BUF / GPUDirect RDMA support, "
                  "BAR1, /dev/gdrhook, and which backend auto would pick");
    doctor->add_option("--libcuda", doctor_options.libcuda, "the CUDA driver library to load")
        ->capture_default_str();
    doctor->add_option("--libnvml", doctor_options.libnvml, "the NVML library to load")
        ->capture_default_str();
    doctor->add_option("--device", doctor_options.device, "the gdrhook device node")
        ->capture_default_str();
    doctor
        ->add_option("--pid", doctor_options.pid,
                     "also look at this running process: whether gdrhook and UCX are both "
                     "loaded, and which one UCX's CUDA memory caches rely on")
        ->check(CLI::Range(1, 4194304)); // Linux's largest pid_max
    doctor->add_flag("--settings", doctor_options.settings,
                     "only list the GDRHOOK_* variables: what each accepts, its default, and its "
                     "value in this environment (a Markdown table)");
    doctor->footer("Exit status: 0 no problems; 1 problems found (each with advice).");

    NodeOptions node_options;
    CLI::App *node = app.add_subcommand(
        "node", "what is pinned on this machine now, by process, user and job: the module's "
                "files and the CUDA driver's dma-bufs (from /proc/*/fdinfo), the module's "
                "counters, BAR1");
    node->add_option("--user", node_options.user,
                     "only what is charged to this user (name or uid) is judged; with --job, "
                     "the job's user (SLURM_JOB_UID) instead: its processes in no Slurm cgroup "
                     "are the job's by their SLURM_JOB_ID (proctrack/linuxproc)")
        ->type_name("USER");
    node->add_option("--job", node_options.job,
                     "only what is this Slurm job's is judged, as `gdrhook epilog` charges it: "
                     "its processes by Slurm's cgroups (the job's user from --user, else from "
                     "them), by their environment only where of the job's user")
        ->type_name("JOBID");
    node->add_option("--fd-budget", node_options.fd_budget,
                     "read at most this many fds in all (the job's processes first); a process "
                     "past it counts as unreadable, never as holding nothing")
        ->capture_default_str();
    node->add_option("-o,--prometheus", node_options.prometheus,
                     "also write the whole node's figures to FILE as a node-exporter textfile "
                     "(replaced whole); '-': to stdout, instead of the text report")
        ->type_name("FILE");
    node->add_option("--libnvml", node_options.libnvml, "the NVML library to ask for BAR1")
        ->capture_default_str();
    add_machine_roots(node, node_options.proc_root, node_options.sys_root);
    node->footer("Run as root to see every process. Exit status: 0 nothing pinned (of USER "
                 "with --user, of JOBID with --job); 1 something is still pinned, or, for the "
                 "whole node, the module holds pins no readable process accounts for; 2 bad "
                 "arguments or an unwritable --prometheus FILE; 3 nothing found, but processes "
                 "it could not read may hold pins (not root).");

    EpilogOptions epilog_options;
    CLI::App *epilog = app.add_subcommand(
        "epilog", "one job's verdict at its end, on this node: its event logs checked and what "
                  "its processes still hold pinned, charged by job, never by user (Slurm)");
    epilog->add_option("--job", epilog_options.job, "the Slurm job id")->required();
    epilog->add_option("--step", epilog_options.step, "only this step of the job");
    epilog->add_option("--uid", epilog_options.uid,
                       "the job's user (else the one its Slurm cgroups show): a process of "
                       "another uid is never the job's, and one in no Slurm cgroup is the job's "
                       "by its SLURM_JOB_ID only if of this uid; run as root, the logs are read "
                       "and the summary written as this user alone");
    epilog->add_option("--events", epilog_options.events,
                       "the job's GDRHOOK_EVENTS pattern: this host's logs are checked");
    epilog->add_option("--summary", epilog_options.summary,
                       "also write the verdict and its details to FILE (%h: this host)");
    epilog->add_option("--load-marks", epilog_options.load_marks,
                       "the file where the shim marks each process that loaded it "
                       "(GDRHOOK_LOAD_MARKS): a step whose processes did not ran without "
                       "gdrhook, which the verdict says (never OK)");
    epilog
        ->add_option("--fd-budget", epilog_options.fd_budget,
                     "read at most this many fds in all (the job's processes first); a process "
                     "past it counts as unreadable, never as holding nothing")
        ->capture_default_str();
    add_machine_roots(epilog, epilog_options.proc_root, epilog_options.sys_root);
    epilog->footer(
        "Run as root. Exit status: 0 the job left nothing pinned here and its logs "
        "pass; 1 it left pins, its logs have problems, a process could not be "
        "read, or it ran without gdrhook; 2 bad arguments or an unwritable --summary FILE.");

    const int parsed = before_first_dashes(argc, argv);
    try {
        app.parse(parsed, argv);
    } catch (const CLI::ParseError &error) {
        int code = app.exit(error);
        return code == 0 ? exit_ok : exit_input;
    }

    if (run->parsed()) {
        // prefix_command leaves the program's name and every word after
        // it (up to the first `--`) unparsed, in order; an option gdrhook
        // run does not know is left there too, where the program's name
        // should be.
        run_options.command = run->remaining();
        if (holds_an_unknown_option(parsed, argv, run_options.command)) {
            std::cerr << "gdrhook run: unknown option " << run_options.command.front()
                      << " (a program whose name starts with '-' follows --)\n"
                         "Run with --help for more information.\n";
            return exit_input;
        }
        // After the first `--`: the program, if its name did not come
        // before; else the rest of its words, that `--` included.
        const int rest = parsed == argc ? argc : run_options.command.empty() ? parsed + 1 : parsed;
        run_options.command.insert(run_options.command.end(), argv + rest, argv + argc);
        if (run_options.command.empty()) {
            std::cerr << "gdrhook run: no program given (the command to run follows the options, "
                         "or --)\n"
                         "Run with --help for more information.\n";
            return exit_input;
        }
        run_options.summary = !no_summary;
        return run_program(run_options, std::cerr);
    }
    if (summary->parsed())
        return log_summary(log_options, std::cout, std::cerr);
    if (check->parsed()) {
        for (const std::string &value : log_options.allow)
            add_allowance(log_options.check, value);
        return log_check(log_options, std::cout, std::cerr);
    }
    if (timeline->parsed())
        return log_timeline(log_options, std::cout, std::cerr);
    if (recover->parsed())
        return log_recover(recover_files, std::cout, std::cerr);
    if (doctor->parsed())
        return run_doctor(doctor_options, std::cout);
    if (node->parsed())
        return run_node(node_options, std::cout, std::cerr);
    if (epilog->parsed())
        return run_epilog(epilog_options, std::cout, std::cerr);
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
