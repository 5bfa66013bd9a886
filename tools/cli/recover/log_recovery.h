// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gdrhook::cli {

// What recovering one journal did.
struct Recovery {
    enum class Result {
        recovered,        // lines appended, the journal removed
        still_running,    // its process lives: nothing changed
        already_complete, // everything was in the log already: journal removed
        unreadable,       // a journal it could not read or recover: left as is
        not_a_journal,    // not gdrhook's (no magic, a link, a FIFO): left as is
    };
    Result result = Result::unreadable;
    std::string journal, log;
    int pid = 0;
    uint64_t events = 0; // lines recovered from the journal
    uint64_t lost = 0;   // events its process could neither write nor keep
    std::string message; // unreadable, not_a_journal: why
};

// The journals beside a log: `<log>.<pid>.<ns>.journal`.
std::vector<std::string> journals_of_log(const std::string &log);

// The log a journal belongs to (its name less `.<pid>.<ns>.journal`).
std::string log_of_journal(const std::string &journal);

// Turns what the process of `journal` left into lines of its log, once
// (docs/log-format.md, "Recovered logs"): the events it recorded and had
// not written, in order, then a `died` line. A journal whose process still
// runs is left alone.
Recovery recover_journal(const std::string &journal);

// Every journal of what `paths` name: a log file's own, every one below a
// directory (recursively); a glob pattern stands for the logs it matches.
std::vector<Recovery> recover_paths(const std::vector<std::string> &paths);

// `gdrhook log recover PATH...`: one line per journal on `out`; exit_ok,
// or exit_input when one could not be read.
int log_recover(const std::vector<std::string> &paths, std::ostream &out, std::ostream &err);

// What the `log` commands and `gdrhook run` say on `err` about the journals
// they recovered before reading (nothing when there were none). Returns
// how many journals were left unrecovered: their events are missing from
// the logs read next, which then cannot pass.
size_t report_recoveries(const std::vector<Recovery> &recoveries, std::ostream &err);

} // namespace gdrhook::cli
