// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Sleeps, so that a test can look at a running process of the build's own
// architecture (what the doctor reads in /proc/PID). /bin/sleep would do
// natively, but under a cross build it is the build machine's program: it
// cannot load the target's shim, and the test would see no shim at all.
//
// usage: sleeper SECONDS
#include <cstdlib>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    sleep(static_cast<unsigned>(std::atoi(argv[1])));
    return 0;
}
