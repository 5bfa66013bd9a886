// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "epilog/epilog_command.h"
#include "command/exit_code.h"
#include "epilog/load_marks.h"
#include "job/slurm_ids.h"
#include "job/verdict_states.h"

#include "log/log_commands.h"
#include "read/events_pattern.h"
#include "report/units.h"
#include "terminal/terminal_text.h"

#include "cache/base/config.h"
#include "cache/base/safe_file.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <map>
#include <ostream>
#include <set>
#include <sstream>

namespace gdrhook::cli {
namespace {

// Takes the ids of user UID (its primary group, no other): for good,
// as setuid does for root.
bool become_user(unsigned uid)
{
    const passwd *pw = getpwuid(uid);
    const gid_t gid = pw ? pw->pw_gid : static_cast<gid_t>(uid);
    return setgroups(0, nullptr) == 0 && setgid(gid) == 0 && setuid(uid) == 0;
}

std::string describe(const PinHolding &h)
{
    std::ostringstream line;
    line << "pid " << h.pid << " (" << UntrustedText(h.comm) << ") fd " << h.fd << ": "
         << (h.kind == PinHolding::Kind::gdrhook_file ? "gdrhook" : "dmabuf") << ", " << h.pins
         << " pins, " << format_bytes(static_cast<double>(h.bytes));
    return line.str();
}

// What the verdict line says beside the pins: the job's own figures.
struct StepFindings {
    uint64_t pins = 0, bytes = 0; // what the job's processes still hold
    size_t logs = 0;              // event logs of this host
    bool bad_logs = false;        // their check failed
    std::string without;          // why the step ran without gdrhook, or ""
    bool marks_read = false;      // the shim's load marks were asked about
};

// One line: the step's state first (OK, FAILED, that it ran without
// gdrhook, never OK then, or that the shim was loaded and no CUDA call
// made), then what it left pinned, what could not be
// seen, and its logs.
std::string verdict_line(const EpilogOptions &options, const std::string &host, const JobPins &pins,
                         const StepFindings &found)
{
    std::ostringstream verdict;
    verdict << "gdrhook: job " << options.job;
    if (!options.step.empty())
        verdict << " step " << options.step;
    verdict << " on " << host << ": ";
    const bool left_pins = !pins.job.empty();
    const bool blind = pins.unreadable > 0;
    if (left_pins || found.bad_logs || blind)
        verdict << "FAILED";
    else if (!found.without.empty())
        verdict << "ran without gdrhook: " << found.without;
    else if (found.marks_read && found.logs == 0)
        verdict << verdict_no_cuda_call;
    else
        verdict << "OK";
    if (left_pins) {
        verdict << "; left " << found.pins << " pin(s), "
                << format_bytes(static_cast<double>(found.bytes)) << ", held by pid";
        std::set<int> pids;
        for (const PinHolding &h : pins.job)
            if (pids.insert(h.pid).second)
                verdict << ' ' << h.pid << " (" << UntrustedText(h.comm) << ")";
    } else if (!blind) {
        verdict << "; nothing of the job left pinned";
    }
    if (blind) {
        verdict << "; could not see " << pins.unreadable << " process(es) (run as root";
        if (pins.past_budget)
            verdict << "; " << pins.past_budget << " past the fd budget, --fd-budget";
        verdict << "), so cannot tell what is pinned";
    }
    verdict << "; log check: ";
    if (found.logs == 0)
        verdict << "no event log (no CUDA call, or the shim was not loaded)";
    else if (found.bad_logs)
        verdict << "problems in " << found.logs << " log(s)";
    else
        verdict << "OK, " << found.logs << " log(s)";
    if ((left_pins || found.bad_logs || blind) && !found.without.empty())
        verdict << "; ran without gdrhook: " << found.without;
    return verdict.str();
}

} // namespace

int run_epilog(const EpilogOptions &options, std::ostream &out, std::ostream &err)
{
    if (!is_job_id(options.job) || (!options.step.empty() && !is_step_id(options.step)) ||
        (!options.uid.empty() && !is_job_id(options.uid))) {
        err << "gdrhook epilog: --job takes a Slurm job id, --step a step id, --uid a uid\n";
        return exit_input;
    }
    std::optional<unsigned> uid;
    if (!options.uid.empty())
        uid = static_cast<unsigned>(std::stoul(options.uid));
    const std::string host = short_host_name();
    std::string summary_path;
    if (!options.summary.empty()) {
        const Result<std::string> expanded =
            expand_path_pattern(options.summary, PathNames{0, host, ""});
        if (!expanded) {
            err << "gdrhook epilog: --summary: " << expanded.why() << '\n';
            return exit_input;
        }
        summary_path = *expanded;
    }

    // What the job's processes hold: as root, who may read every process.
    ScanOptions scan;
    scan.fd_budget = options.fd_budget;
    scan.job = options.job;
    scan.job_user = uid;
    const JobPins pins = pins_of_job(scan_node(options.proc_root, options.sys_root, scan),
                                     options.job, options.step);
    // The rest as the job's user: its folder is the user's to change (a
    // link put there while root writes would aim root's summary anywhere),
    // its logs the user's to read.
    if (uid && geteuid() == 0 && !become_user(*uid)) {
        err << "gdrhook epilog: cannot take the ids of user " << *uid << '\n';
        return exit_input;
    }

    // The job's logs of this host, checked as `gdrhook log check` does.
    std::ostringstream check_text, check_errors;
    int check_status = exit_ok;
    LogOptions logs;
    if (!options.events.empty())
        logs.files = expand_events_pattern(options.events, host);
    if (!logs.files.empty())
        check_status = log_check(logs, check_text, check_errors);

    uint64_t job_pins = 0, job_bytes = 0;
    std::set<std::string> counted;
    for (const PinHolding &h : pins.job)
        if (counted.insert(h.key).second) {
            job_pins += h.pins;
            job_bytes += h.bytes;
        }

    const bool left_pins = !pins.job.empty();
    const bool bad_logs = check_status != exit_ok;
    const bool blind = pins.unreadable > 0;
    const std::string without = options.load_marks.empty()
                                    ? ""
                                    : ran_without_gdrhook(options.load_marks, logs.files.empty());
    const std::string verdict = verdict_line(
        options, host, pins,
        {job_pins, job_bytes, logs.files.size(), bad_logs, without, !options.load_marks.empty()});
    out << verdict << '\n';

    if (!summary_path.empty()) {
        std::ostringstream text;
        text << verdict << "\n\nwhat the job holds pinned on " << host << ":\n";
        for (const PinHolding &h : pins.job)
            text << "  " << describe(h) << '\n';
        if (pins.job.empty())
            text << "  nothing\n";
        text << "not the job's, not held against it: " << pins.other_jobs_pins
             << " pin(s) of other jobs, " << pins.no_job_pins << " of processes of no job, "
             << pins.unattributed_pins << " module pin(s) no readable process holds\n";
        text << "\nlog check of " << UntrustedText(options.events) << " on " << host << ":\n"
             << check_text.str() << check_errors.str();
        // Beside the user's logs, as the user: a link or another user's
        // file at the name is refused (safe_file.h).
        const Result<void> written =
            replace_by_rename(summary_path, text.str(), private_file_mode(summary_path));
        if (!written) {
            err << "gdrhook epilog: " << UntrustedText(summary_path) << " " << written.why()
                << '\n';
            return exit_input;
        }
    }
    return left_pins || bad_logs || blind || !without.empty() ? exit_findings : exit_ok;
}

} // namespace gdrhook::cli
