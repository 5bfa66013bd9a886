// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Recovery of the events a dead process left in its journal
// (cache/events/journal_layout.h). The order of the steps is what makes it
// safe to run at any time, any number of times, from several tools at once:
//
//  1. Take the journal's lock without waiting. The process holds it while
//     it lives; another recovery holds it while it works. Either way: leave.
//     A process can lose its lock while it lives (a program that closes
//     every fd it did not open): on the machine and boot it ran on, a live
//     pid with the journal's start time means it still runs.
//  2. Make sure the name still leads to the file we locked (a recovery
//     that just finished removed it). The events were read before: the
//     same either way, only the process writes them.
//  3. Read the end of the log: the process's last line written from its
//     queue says which of the journal's events are in the log already (the
//     worker releases a cell only after its line is written, but may have
//     been killed between the two), and a `died` line says it was
//     recovered before (the journal could not be removed).
//  4. Append the rest and the `died` line in one write(2), then remove the
//     journal.
#include "recover/log_recovery.h"
#include "terminal/terminal_text.h"

#include "command/exit_code.h"
#include "recover/journal_reader.h"
#include "recover/log_tail.h"

#include "cache/base/safe_file.h"
#include "cache/base/unique_fd.h"
#include "cache/events/event_line.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <glob.h>
#include <ostream>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace gdrhook::cli {
namespace {

namespace fs = std::filesystem;

// Lines stamped this long before the journal was made are not its
// process's (log_tail.h): the program an exec replaced wrote them.
constexpr uint64_t journal_slack_ns = 1000000;

bool ends_with(const std::string &text, const std::string &suffix)
{
    return text.size() >= suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// `.<pid>.<ns>.journal` at the end of `name`: where the log's name ends.
size_t log_name_length(const std::string &name)
{
    if (!ends_with(name, journal_suffix))
        return std::string::npos;
    size_t end = name.size() - strlen(journal_suffix);
    for (int field = 0; field < 2; ++field) {
        const size_t dot = name.rfind('.', end - 1);
        if (dot == std::string::npos || dot + 1 == end ||
            name.find_first_not_of("0123456789", dot + 1) < end)
            return std::string::npos;
        end = dot;
    }
    return end;
}

bool lock_without_waiting(int fd)
{
    struct flock lock = {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    return fcntl(fd, F_SETLK, &lock) == 0;
}

// Whether `name` in `folder` is still the file open at `fd`.
bool still_names(int folder, const std::string &name, int fd)
{
    struct stat by_name, by_fd;
    return fstatat(folder, name.c_str(), &by_name, AT_SYMLINK_NOFOLLOW) == 0 &&
           fstat(fd, &by_fd) == 0 && by_name.st_dev == by_fd.st_dev &&
           by_name.st_ino == by_fd.st_ino;
}

bool ends_inside_a_line(int fd)
{
    struct stat st;
    char last = '\n';
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0 &&
           pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n';
}

// Whether the file open at `fd` is empty or starts as every line of a
// gdrhook log does: recovery appends to nothing else.
bool holds_gdrhook_lines(int fd)
{
    char head[log_line_start.size()];
    const ssize_t got = pread(fd, head, sizeof head, 0);
    return got == 0 || (got == static_cast<ssize_t>(sizeof head) &&
                        std::string_view(head, sizeof head) == log_line_start);
}

std::string this_host()
{
    char host[64] = {};
    gethostname(host, sizeof host - 1);
    return host;
}

// Field 22 of /proc/PID/stat, 0 when there is no such process.
uint64_t start_ticks_of(int pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    const Result<std::string> read = read_small_file(path, 1024);
    if (!read)
        return 0;
    const std::string &text = *read;
    const char *p = strrchr(text.c_str(), ')');
    unsigned long long ticks = 0;
    if (!p ||
        sscanf(p + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &ticks) != 1)
        return 0;
    return ticks;
}

// Whether the journal's process may still run (or another recovery holds
// the journal): it holds the lock while it lives; and since a program can
// drop the lock while it lives (one that closes every fd it did not
// open), a live pid with the journal's start time, on the machine and
// boot the journal was made on, counts too. Takes the lock otherwise.
bool owner_may_live(int fd, const JournalHeader &header)
{
    if (!lock_without_waiting(fd))
        return true;
    return header.start_ticks && this_host() == header.host && made_on_this_boot(header) &&
           start_ticks_of(header.pid) == header.start_ticks;
}

bool write_all(int fd, const std::string &text)
{
    const char *data = text.data();
    size_t left = text.size();
    while (left) {
        ssize_t written = write(fd, data, left);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return false;
        data += written;
        left -= static_cast<size_t>(written);
    }
    return true;
}

uint64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The line that ends a recovered process's log (docs/log-format.md).
// `lost`: events the process could not write nor keep in its journal
// (a full file system), said only when there were some.
std::string died_line(int pid, uint64_t ts_ns, uint64_t seq, uint64_t recovered, uint64_t lost)
{
    return format_died_line("gdrhook_recover", pid, ts_ns, seq, recovered, now_ns(), lost);
}

Recovery unreadable(Recovery r, std::string why)
{
    r.result = Recovery::Result::unreadable;
    r.message = std::move(why);
    return r;
}

Recovery not_a_journal(Recovery r, std::string why)
{
    r.result = Recovery::Result::not_a_journal;
    r.message = std::move(why);
    return r;
}

} // namespace

std::vector<std::string> journals_of_log(const std::string &log)
{
    const fs::path path(log);
    const std::string name = path.filename().string();
    std::vector<std::string> found;
    std::error_code error;
    const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
    for (fs::directory_iterator it(folder, error); !error && it != fs::directory_iterator();
         it.increment(error)) {
        const std::string candidate = it->path().filename().string();
        if (log_name_length(candidate) == name.size() &&
            candidate.compare(0, name.size(), name) == 0)
            found.push_back((folder / candidate).string());
    }
    std::sort(found.begin(), found.end());
    return found;
}

std::string log_of_journal(const std::string &journal)
{
    const fs::path path(journal);
    const std::string name = path.filename().string();
    const size_t length = log_name_length(name);
    if (length == std::string::npos)
        return {};
    return (path.parent_path() / name.substr(0, length)).string();
}

Recovery recover_journal(const std::string &journal)
{
    Recovery r;
    r.journal = journal;
    r.log = log_of_journal(journal);
    if (r.log.empty())
        return unreadable(r, "not named <log>.<pid>.<ns>.journal");
    // Everything below goes through the folder open here, never through
    // a symbolic link at the journal's or the log's name.
    const fs::path journal_path(journal);
    const std::string journal_name = journal_path.filename().string();
    const std::string log_name = fs::path(r.log).filename().string();
    // The folder the user named (a link or not), as every folder above it.
    OpenedFile opened_folder = open_folder(
        AT_FDCWD, journal_path.has_parent_path() ? journal_path.parent_path().c_str() : ".",
        FolderName::named_by_user);
    UniqueFd folder = std::move(opened_folder->fd);
    if (folder.get() < 0)
        return unreadable(r, "its folder " + opened_folder.why());
    // Anyone's journal: whose it is says whose log its events go to.
    OpenedFile opened_journal =
        open_for_update(folder.get(), journal_name.c_str(), Owner::anyone());
    UniqueFd fd = std::move(opened_journal->fd);
    if (fd.get() < 0) {
        if (opened_journal.system_error() == ENOENT) { // recovered by someone else just now
            r.result = Recovery::Result::already_complete;
            return r;
        }
        if (opened_journal.system_error() ==
            0) // refused: "is a symbolic link", "is not a regular file"
            return not_a_journal(r,
                                 opened_journal.why().substr(opened_journal.why().find(' ') + 1));
        return unreadable(r, strerror(opened_journal.system_error()));
    }
    struct stat journal_st;
    if (fstat(fd.get(), &journal_st) != 0)
        return unreadable(r, strerror(errno));
    JournalContents contents;
    const Result<void> read = read_journal(fd.get(), contents);
    const JournalHeader &h = contents.header;
    // Without its magic the file is not one gdrhook made whole (or not
    // gdrhook's at all): never ours to remove.
    if (memcmp(h.magic, journal_magic, sizeof journal_magic) != 0)
        return not_a_journal(r, "not a gdrhook journal");
    r.pid = h.pid;
    if (owner_may_live(fd.get(), h)) {
        r.result = Recovery::Result::still_running;
        return r;
    }
    if (!still_names(folder.get(), journal_name, fd.get())) {
        r.result = Recovery::Result::already_complete;
        return r;
    }
    if (!read)
        return unreadable(r, read.why());
    if (h.state.load(std::memory_order_acquire) == static_cast<uint32_t>(JournalState::complete)) {
        unlinkat(folder.get(), journal_name.c_str(), 0);
        r.result = Recovery::Result::already_complete;
        return r;
    }

    // The log is the journal owner's: a regular file of theirs, with one
    // name, that holds gdrhook lines (safe_file.h), or none yet.
    OpenedFile opened = open_for_append(folder.get(), log_name.c_str(),
                                        Owner::is(journal_st.st_uid), false, 0, true);
    UniqueFd log = std::move(opened->fd);
    if (log.get() < 0 && opened.system_error() != ENOENT)
        return unreadable(r, "will not write " + r.log + ": it " + opened.why());
    if (log.get() >= 0 && !holds_gdrhook_lines(log.get()))
        return unreadable(r, "will not write " + r.log + ": it is not a gdrhook log");
    const uint64_t since = h.created_ns > journal_slack_ns ? h.created_ns - journal_slack_ns : 0;
    ProcessTail tail;
    if (log.get() >= 0) {
        cut_torn_line_of(log.get(), h.pid);
        tail = scan_process_tail(log.get(), h.pid, since);
    }
    if (tail.died) {
        unlinkat(folder.get(), journal_name.c_str(), 0);
        r.result = Recovery::Result::already_complete;
        return r;
    }
    // Nothing written and nothing recorded: the process never had a log.
    if (!tail.last_ts_ns && contents.events.empty() && !h.lost_events) {
        unlinkat(folder.get(), journal_name.c_str(), 0);
        r.result = Recovery::Result::already_complete;
        return r;
    }

    // A last line that is not gdrhook's stays, on its own line.
    std::string lines = ends_inside_a_line(log.get()) ? "\n" : "";
    uint64_t last_ts = tail.last_ts_ns, last_seq = tail.last_seq;
    for (const JournalEvent &je : contents.events) {
        if (tail.wrote_positioned && je.event.seq <= tail.last_position)
            continue; // written; the process died before it freed the cell
        char line[max_line_size];
        lines.append(line, format_event_line_at(je.event, je.realtime_ns, h.pid, line));
        last_ts = std::max(last_ts, je.realtime_ns);
        last_seq = std::max(last_seq, je.event.seq);
        ++r.events;
    }
    r.lost = h.lost_events;
    lines += died_line(h.pid, last_ts ? last_ts : h.created_ns, last_seq, r.events, r.lost);
    if (log.get() < 0) {
        // Made as the process would have made it: its owner, its mode.
        opened =
            open_for_append(folder.get(), log_name.c_str(), Owner::is(geteuid()), true, 0600, true);
        log = std::move(opened->fd);
        if (log.get() >= 0) {
            const bool owned =
                fchown(log.get(), journal_st.st_uid, journal_st.st_gid) == 0 || geteuid() != 0;
            fchmod(log.get(), journal_st.st_mode & 0666);
            if (!owned)
                return unreadable(r, "cannot give " + r.log + " its owner: " + strerror(errno));
        }
    }
    if (log.get() < 0)
        return unreadable(r, "will not write " + r.log + ": it " + opened.why());
    if (!write_all(log.get(), lines))
        return unreadable(r, "cannot append to " + r.log + ": " + strerror(errno));
    if (still_names(folder.get(), journal_name, fd.get()))
        unlinkat(folder.get(), journal_name.c_str(), 0);
    r.result = Recovery::Result::recovered;
    return r;
}

std::vector<Recovery> recover_paths(const std::vector<std::string> &paths)
{
    std::vector<std::string> journals;
    auto add_log = [&](const std::string &log) {
        if (log_name_length(fs::path(log).filename().string()) != std::string::npos) {
            journals.push_back(log); // a journal named itself
            return;
        }
        for (std::string &journal : journals_of_log(log))
            journals.push_back(std::move(journal));
    };
    for (const std::string &path : paths) {
        std::error_code error;
        if (fs::is_directory(path, error)) {
            std::vector<std::string> found;
            for (fs::recursive_directory_iterator it(
                     path, fs::directory_options::skip_permission_denied, error);
                 !error && it != fs::recursive_directory_iterator(); it.increment(error))
                if (log_name_length(it->path().filename().string()) != std::string::npos)
                    found.push_back(it->path().string());
            std::sort(found.begin(), found.end());
            journals.insert(journals.end(), found.begin(), found.end());
        } else if (path.find_first_of("*?[") != std::string::npos && !fs::exists(path, error)) {
            glob_t matched = {};
            if (glob(path.c_str(), 0, nullptr, &matched) == 0)
                for (size_t i = 0; i < matched.gl_pathc; ++i)
                    add_log(matched.gl_pathv[i]);
            globfree(&matched);
        } else {
            add_log(path);
        }
    }
    std::set<std::string> seen;
    std::vector<Recovery> recoveries;
    for (const std::string &journal : journals) {
        if (!seen.insert(journal).second)
            continue;
        // One bad file is reported by name; the others are still read.
        try {
            recoveries.push_back(recover_journal(journal));
        } catch (const std::exception &error) {
            Recovery r;
            r.journal = journal;
            recoveries.push_back(unreadable(r, error.what()));
        }
    }
    return recoveries;
}

int log_recover(const std::vector<std::string> &paths, std::ostream &out, std::ostream &err)
{
    int status = exit_ok;
    for (const Recovery &r : recover_paths(paths)) {
        switch (r.result) {
        case Recovery::Result::recovered:
            out << UntrustedText(r.log) << ": process " << r.pid
                << " ended without writing its log; recovered " << r.events << " event"
                << (r.events == 1 ? "" : "s") << " from " << UntrustedText(r.journal);
            if (r.lost)
                out << "; " << r.lost << " event(s) lost";
            out << '\n';
            break;
        case Recovery::Result::still_running:
            out << UntrustedText(r.journal) << ": its process still runs; left as it is\n";
            break;
        case Recovery::Result::already_complete:
            out << UntrustedText(r.journal) << ": nothing to recover; removed\n";
            break;
        case Recovery::Result::unreadable:
            err << "gdrhook: " << UntrustedText(r.journal) << ": " << UntrustedText(r.message)
                << '\n';
            status = exit_input;
            break;
        case Recovery::Result::not_a_journal:
            out << UntrustedText(r.journal) << ": " << UntrustedText(r.message)
                << "; left as it is\n";
            break;
        }
    }
    return status;
}

size_t report_recoveries(const std::vector<Recovery> &recoveries, std::ostream &err)
{
    size_t not_recovered = 0;
    for (const Recovery &r : recoveries) {
        if (r.result == Recovery::Result::recovered) {
            err << "gdrhook: " << UntrustedText(r.log) << ": process " << r.pid
                << " ended without writing its log; recovered " << r.events << " event"
                << (r.events == 1 ? "" : "s") << " from its journal";
            if (r.lost)
                err << "; " << r.lost << " event(s) lost";
            err << '\n';
        } else if (r.result == Recovery::Result::unreadable) {
            err << "gdrhook: " << UntrustedText(r.journal) << ": " << UntrustedText(r.message)
                << "; not recovered\n";
            ++not_recovered;
        }
    }
    return not_recovered;
}

} // namespace gdrhook::cli
