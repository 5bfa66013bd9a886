// SPDX-License-Identifier: MIT OR GPL-2.0-only
// The `gdrhook log ...` commands: read the files once, feed one consumer,
// report what could not be read, and choose the exit status.
#include "log/log_commands.h"

#include "command/exit_code.h"
#include "read/batched_reader.h"
#include "read/every_event.h"
#include "read/log_inputs.h"
#include "read/malformed_line_report.h"
#include "recover/log_recovery.h"
#include "report/check.h"
#include "report/summary.h"
#include "report/timeline.h"
#include "terminal/terminal_text.h"

#include "cache/base/safe_file.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ostream>
#include <thread>

namespace gdrhook::cli {

unsigned default_parse_threads()
{
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    // More CPUs than a cpu_set_t holds (1,024): they are not counted here.
    int usable = sched_getaffinity(0, sizeof cpus, &cpus) == 0
                     ? CPU_COUNT(&cpus)
                     : static_cast<int>(std::thread::hardware_concurrency());
    return static_cast<unsigned>(std::clamp(usable - 1, 0, 8));
}

namespace {

struct ReadOutcome {
    std::vector<std::string> files; // what the arguments expanded to
    uint64_t unreadable = 0;        // inputs: arguments, files, reads
    uint64_t unopened_files = 0;
    uint64_t malformed = 0;
    uint64_t bytes = 0;
    bool input_ok() const { return unreadable == 0 && malformed == 0; }
};

// Expands the arguments (files, directories, patterns) and reads every
// file with the one reader (BatchedLogReader) into @p consumer, @p threads
// parsing ahead, @p steps held; problems with the input go to @p err as
// "gdrhook: ..." or "FILE:LINE: ...".
ReadOutcome read_logs(const LogOptions &options, std::ostream &err, JobStepConsumer &consumer,
                      size_t threads, size_t steps)
{
    ReadOutcome outcome;
    // What dead processes left in their journals becomes lines of their
    // logs first, so that every command reads whole logs.
    outcome.unreadable += report_recoveries(recover_paths(options.files), err);
    LogInputs inputs = expand_log_inputs(options.files);
    for (const std::string &message : inputs.errors) {
        err << "gdrhook: " << UntrustedText(message) << '\n';
        ++outcome.unreadable;
    }
    outcome.files = std::move(inputs.files);
    MalformedLineReport report(err, outcome.files);
    BatchedLogReader reader(outcome.files, report, consumer, threads, steps);
    reader.set_min_ts(options.min_ts_ns);
    for (const std::string &message : reader.open()) {
        err << "gdrhook: " << UntrustedText(message) << '\n';
        ++outcome.unreadable;
        ++outcome.unopened_files;
    }
    reader.run();
    for (const std::string &message : reader.read_errors()) {
        err << "gdrhook: " << UntrustedText(message) << '\n';
        ++outcome.unreadable;
    }
    report.finish();
    outcome.malformed = report.total();
    outcome.bytes = reader.bytes_read();
    return outcome;
}

// Every event whole into @p consumer.add(event, where), in the order of
// time across the files, parsed on this thread.
template <typename Consumer>
ReadOutcome read_logs_in_order(const LogOptions &options, std::ostream &err, Consumer &consumer)
{
    EveryEvent every(
        [&](const LogEvent &event, const SourceLocation &where) { consumer.add(event, where); });
    return read_logs(options, err, every, 0, every_event_steps);
}

} // namespace

int log_summary(const LogOptions &options, std::ostream &out, std::ostream &err)
{
    SummaryBuilder builder;
    // A file's batch of events at a time: the summary's figures of one
    // process need only its own events, and the job's peaks come from the
    // steps, merged in time order (BatchedLogReader).
    size_t steps = options.step_budget ? options.step_budget : BatchedLogReader::step_budget;
    ReadOutcome read = read_logs(options, err, builder, options.threads, steps);
    Summary summary =
        builder.finish(read.files.size() - read.unopened_files, read.bytes, read.malformed);
    if (options.json)
        out << summary_json(summary);
    else
        print_summary(out, summary);
    return read.input_ok() ? exit_ok : exit_input;
}

namespace {

// Whether the file at @p path ends inside a line: the shim ends every
// line it writes with a newline, so a last byte that is not one is a
// write that stopped there (the rest of the line may still parse).
bool ends_inside_a_line(const std::string &path)
{
    OpenedFile opened = open_for_reading(AT_FDCWD, path.c_str(), Owner::anyone(), true);
    if (!opened)
        return false; // the reader said why already
    struct stat st;
    char last = '\n';
    if (fstat(opened->fd.get(), &st) == 0 && st.st_size > 0 &&
        pread(opened->fd.get(), &last, 1, st.st_size - 1) != 1)
        last = '\n';
    return last != '\n';
}

// The logs that lost events without a line that says so: cut inside their
// last line, with no `died` line after it (recovery cuts the torn line
// and ends the log with one) and no journal left beside them that holds
// the rest. The writer stopped inside write(2) and kept nothing: a file
// system or a file-size limit that took no more, which also left no room
// for a journal or for the line that counts the loss. Printed, counted.
size_t report_incomplete_logs(const std::vector<std::string> &logs, std::ostream &out)
{
    size_t incomplete = 0;
    for (const std::string &log : logs) {
        if (!ends_inside_a_line(log) || !journals_of_log(log).empty())
            continue; // whole, or its process still runs: the journal holds the rest
        out << UntrustedText(log)
            << ": incomplete: it ends inside a line, with no end line (`died`) and no journal: "
               "events were lost (a full file system or a file-size limit?)\n";
        ++incomplete;
    }
    return incomplete;
}

} // namespace

int log_check(const LogOptions &options, std::ostream &out, std::ostream &err)
{
    Checker checker(options.check);
    ReadOutcome read = read_logs_in_order(options, err, checker);
    CheckResult result = checker.finish();
    result.incomplete_logs = report_incomplete_logs(read.files, out);
    print_check(out, result, read.files, read.malformed, read.unreadable);
    if (!read.input_ok())
        return exit_input;
    return result.passed() ? exit_ok : exit_findings;
}

int log_timeline(const LogOptions &options, std::ostream &out, std::ostream &err)
{
    TimelineBuilder builder;
    ReadOutcome read = read_logs_in_order(options, err, builder);
    Timeline timeline = builder.finish();
    SvgOptions svg;
    svg.title = "gdrhook timeline: " + std::to_string(timeline.processes) + " process(es), " +
                std::to_string(timeline.events) + " event(s)";
    svg.files = read.files;
    std::string text = render_timeline_svg(timeline, svg);

    // Replaced whole, never written through a link planted at its name.
    if (const Result<void> written = replace_by_rename(options.output, text, 0644); !written) {
        err << "gdrhook: cannot write '" << UntrustedText(options.output) << "': it "
            << written.why() << '\n';
        return exit_input;
    }
    out << "gdrhook log timeline: wrote " << UntrustedText(options.output) << " ("
        << timeline.processes << " process(es), " << timeline.events << " event(s))\n";
    return read.input_ok() ? exit_ok : exit_input;
}

} // namespace gdrhook::cli
