// SPDX-License-Identifier: MIT OR GPL-2.0-only
#ifndef GDRHOOK_TOOLS_STATUS_H
#define GDRHOOK_TOOLS_STATUS_H

#include <string>
#include <utility>

namespace gdrhook::cli {

/// Exit statuses shared by every command, so that scripts can tell a finding
/// from a mistake in how the tool was called.
enum ExitCode : int {
    exit_ok = 0,
    exit_findings = 1, ///< log check found problems; doctor found problems
    exit_input = 2,    ///< bad arguments, unreadable files, malformed log lines
};

/// An error as a value: empty message means success.
class Status {
public:
    Status() = default;
    static Status error(std::string message) { return Status(std::move(message)); }

    bool ok() const { return message_.empty(); }
    const std::string &message() const { return message_; }

private:
    explicit Status(std::string message) : message_(std::move(message)) {}
    std::string message_;
};

} // namespace gdrhook::cli

#endif
