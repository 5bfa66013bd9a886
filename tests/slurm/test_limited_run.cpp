// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The run of a step's epilog that root waits for (tools/slurm/limited_run.h),
// without Slurm: a program's first line comes back; and where waiting for
// it fails (poll(2) failing, made to fail here by a stand-in for poll that
// this program's own calls reach), the run fails with the system's words
// for why, and the program is killed and reaped, never left running.
#include "tools/slurm/limited_run.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <time.h>

namespace {

// The error every poll fails with while set; 0: poll works.
std::atomic<int> poll_error{0};

} // namespace

// A stand-in for libc's poll, which the calls of this program (those of
// limited_run.cpp, linked in) reach before libc's.
extern "C" int poll(pollfd *fds, nfds_t count, int timeout_ms)
{
    if (const int error = poll_error.load()) {
        errno = error;
        return -1;
    }
    if (timeout_ms < 0)
        return ppoll(fds, count, nullptr, nullptr);
    const timespec timeout = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
    return ppoll(fds, count, &timeout, nullptr);
}

TEST_CASE("a limited run hands back the program's first line")
{
    const auto run = gdrhook::slurm::run_with_limit({"/bin/sh", "-c", "echo first; echo second"},
                                                    {"PATH=/usr/bin:/bin"}, 60);
    REQUIRE(run);
    CHECK(run->first_line == "first");
    CHECK_FALSE(run->timed_out);
}

TEST_CASE("a program that cannot be waited for is killed, reaped, and the run fails saying why")
{
    // A program that would outlive the test by far if it were not killed.
    poll_error = ENOMEM;
    const auto run = gdrhook::slurm::run_with_limit({"/bin/sleep", "600"}, {}, 600);
    poll_error = 0;
    REQUIRE_FALSE(run);
    CHECK(run.why() == "cannot be waited for (" + std::string(std::strerror(ENOMEM)) + ")");
    // Nothing left to reap: the program was waited for after its kill.
    errno = 0;
    CHECK(waitpid(-1, nullptr, WNOHANG) == -1);
    CHECK(errno == ECHILD);
}
