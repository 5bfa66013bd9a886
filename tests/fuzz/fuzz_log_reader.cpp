// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// libFuzzer target: the event-log reader of the gdrhook tool, the way
// `gdrhook log summary`, `log check` and `log timeline` read a file: the
// input is the file (handed over as /proc/self/fd/N of a memfd), read by
// LineReader and LineParser and fed to the summary, the checker and the
// timeline. Malformed lines must be reported, never crash or hang; the
// sanitizers report the rest.
#include "log/log_commands.h"

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace {

int memfd_with(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz-log", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0)
            abort();
        done += static_cast<size_t>(n);
    }
    return fd;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace gdrhook::cli;
    int fd = memfd_with(data, size);
    LogOptions options;
    options.files = {"/proc/self/fd/" + std::to_string(fd)};
    std::ostringstream out, err;
    int summary = log_summary(options, out, err);
    options.json = true;
    log_summary(options, out, err);
    int check = log_check(options, out, err);
    options.output = "/dev/null";
    log_timeline(options, out, err);
    // Exit statuses the tool documents: 0, 1 (findings), 2 (bad input).
    if (summary < 0 || summary > 2 || check < 0 || check > 2)
        abort();
    close(fd);
    return 0;
}
