// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A program that holds many allocations and still opens its own files
// (issue 39): at a soft RLIMIT_NOFILE of 1024 (set here, before its first
// CUDA call, which is when the shim starts and reads the limit), it
// allocates 1,100 buffers of 1 MiB with cuMemAlloc and keeps them, then
// opens /dev/null 512 times. Prints
//   fds_after_allocs=N  descriptors open once every buffer is allocated
//   opened=N            how many of the 512 opens succeeded
//   open_errno=E        the errno of the first that failed (0: none)
//   lowest_fd=N         the number the first open got
//   opened_until_refused=N  how many it could open in all, going on
//                       until an open failed (its limit reached)
//   hard_limit=N        the hard RLIMIT_NOFILE (the room above the soft
//                       one that gdrhook's descriptors may take)
// and, with every number below its limit taken, allocates one buffer more
// (a pin of it needs a descriptor that the program's numbers cannot give).
// then closes its files, frees every buffer and exits 0 when every CUDA
// call succeeded. Nothing of gdrhook in it.
#include "cuda_checks.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

namespace {

constexpr rlim_t descriptor_limit = 1024;
constexpr int buffers = 1100;
constexpr int own_opens = 512;

int open_descriptors()
{
    DIR *dir = opendir("/proc/self/fd");
    if (!dir)
        return -1;
    int n = 0;
    while (dirent *entry = readdir(dir))
        n += entry->d_name[0] != '.';
    closedir(dir);
    return n - 1; // the directory's own
}

} // namespace

int main()
{
    rlimit limit = {};
    getrlimit(RLIMIT_NOFILE, &limit);
    if (limit.rlim_cur != descriptor_limit) {
        limit.rlim_cur = descriptor_limit;
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
            std::perror("setrlimit");
            return 1;
        }
    }
    if (!current_primary_context())
        return failed("context setup", CUDA_ERROR_UNKNOWN);
    std::vector<CUdeviceptr> held(buffers);
    for (CUdeviceptr &p : held)
        CHECK_CU(cuMemAlloc(&p, 1 << 20));
    std::printf("fds_after_allocs=%d\n", open_descriptors());

    std::vector<int> files;
    int open_errno = 0;
    for (int i = 0; i < own_opens; ++i) {
        const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            open_errno = errno;
            break;
        }
        files.push_back(fd);
    }
    std::printf("opened=%zu\nopen_errno=%d\nlowest_fd=%d\n", files.size(), open_errno,
                files.empty() ? -1 : files.front());
    // The limit bounds the loop: every number below it taken, open fails.
    while (open_errno == 0) {
        const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            break;
        files.push_back(fd);
    }
    std::printf("opened_until_refused=%zu\nhard_limit=%llu\n", files.size(),
                static_cast<unsigned long long>(limit.rlim_max));
    CUdeviceptr at_limit = 0;
    CHECK_CU(cuMemAlloc(&at_limit, 1 << 20));
    for (int fd : files)
        close(fd);
    CHECK_CU(cuMemFree(at_limit));
    for (CUdeviceptr p : held)
        CHECK_CU(cuMemFree(p));
    return 0;
}
