// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

namespace gdrhook::cli {

// Exit statuses shared by every command, so that scripts can tell a finding
// from a mistake in how the tool was called.
enum ExitCode : int {
    exit_ok = 0,
    exit_findings = 1, // log check found problems; doctor found problems
    exit_input = 2,    // bad arguments, unreadable files or journals, malformed log lines,
                       // output that could not be written
    exit_unseen = 3,   // gdrhook node: too little of the machine readable to tell
};

} // namespace gdrhook::cli
