// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The main of every Catch2 test program. GDRHOOKTEST_STOP_AT_FAILURE=1
// stops a program at its first failed assertion instead of running the
// rest: tests/mutants/run.py sets it, since one failure already catches a
// mutant and the remaining test cases would only add time (and a mutant
// often makes them wait out their timeouts).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>

int main(int argc, char *argv[])
{
    Catch::Session session;
    int rc = session.applyCommandLine(argc, argv);
    if (rc != 0)
        return rc;
    const char *stop = std::getenv("GDRHOOKTEST_STOP_AT_FAILURE");
    if (stop && std::strcmp(stop, "1") == 0)
        session.configData().abortAfter = 1;
    return session.run();
}
