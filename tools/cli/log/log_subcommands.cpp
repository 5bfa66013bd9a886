// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "log/log_subcommands.h"

#include "log/log_commands.h"
#include "recover/log_recovery.h"
#include "report/check.h"

#include <iostream>
#include <memory>

namespace gdrhook::cli {

namespace {

void add_files(CLI::App *command, std::vector<std::string> &files)
{
    command->add_option("files", files, "event logs (JSON Lines), one per process; merged by time")
        ->required();
}

Command add_summary(CLI::App &log, const std::shared_ptr<LogOptions> &options)
{
    CLI::App *summary = log.add_subcommand(
        "summary", "events by kind and API, live and pinned memory (peaks), unpin delay "
                   "percentiles, errors");
    add_files(summary, options->files);
    summary->add_flag("--json", options->json, "print one JSON object instead of text");
    summary
        ->add_option("--threads", options->threads,
                     "threads that parse the logs ahead of the one that sums them up; 0: that "
                     "one alone (default: one less than the CPUs gdrhook may run on, at most 8; a "
                     "single file is parsed by that one)")
        ->type_name("N")
        ->capture_default_str()
        ->check(CLI::Range(0, static_cast<int>(max_parse_threads)));
    summary->footer(exit_footer);
    return {summary,
            [options](const CommandLine &) { return log_summary(*options, std::cout, std::cerr); }};
}

Command add_check(CLI::App &log, const std::shared_ptr<LogOptions> &options)
{
    CLI::App *check = log.add_subcommand(
        "check", "fail unless every pin was unpinned (after its revocation, if revoked), no "
                 "pinned memory was freed without an unpin, verify mode found nothing and no "
                 "error event was logged (for CI)");
    add_files(check, options->files);
    check
        ->add_option("--allow", options->allow,
                     "problems you expect, counted but not failing the check (repeatable): " +
                         allowance_words())
        ->type_name("KIND")
        ->allow_extra_args(false) // one value per --allow; the files follow
        ->check([](const std::string &value) {
            CheckOptions scratch;
            return add_allowance(scratch, value) ? std::string()
                                                 : "unknown problem kind '" + value + "'";
        });
    check->footer(exit_footer);
    return {check, [options](const CommandLine &) {
                for (const std::string &value : options->allow)
                    add_allowance(options->check, value);
                return log_check(*options, std::cout, std::cerr);
            }};
}

Command add_timeline(CLI::App &log, const std::shared_ptr<LogOptions> &options)
{
    CLI::App *timeline = log.add_subcommand(
        "timeline", "plot pinned and live GPU memory over time, per process, as SVG (and "
                    "each process's RSS and open fds where the log has samples)");
    add_files(timeline, options->files);
    timeline->add_option("-o,--output", options->output, "the SVG file to write")->required();
    timeline->footer(exit_footer);
    return {timeline, [options](const CommandLine &) {
                return log_timeline(*options, std::cout, std::cerr);
            }};
}

Command add_recover(CLI::App &log)
{
    auto files = std::make_shared<std::vector<std::string>>();
    CLI::App *recover = log.add_subcommand(
        "recover", "turn what processes that ended without writing their logs (killed, "
                   "crashed) left in their journals into log lines; summary, check, timeline "
                   "and run do this by themselves");
    add_files(recover, *files);
    recover->footer(exit_footer);
    return {recover,
            [files](const CommandLine &) { return log_recover(*files, std::cout, std::cerr); }};
}

} // namespace

std::vector<Command> add_log(CLI::App &app)
{
    CLI::App *log = app.add_subcommand("log", "read event logs written by the shim");
    log->require_subcommand(1);
    log->footer(exit_footer);
    auto options = std::make_shared<LogOptions>();
    return {add_summary(*log, options), add_check(*log, options), add_timeline(*log, options),
            add_recover(*log)};
}

} // namespace gdrhook::cli
