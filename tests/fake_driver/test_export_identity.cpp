// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The fake driver's dma-buf exports are files, known by their identity:
// memory freed while its export is open stays counted in cuMemGetInfo,
// and is given back once the export closes, whatever else the process has
// open. A file of another file system may carry the same inode number: a
// pipe's (pipefs) and a memfd's (shmem) numbers come from counters of their
// own, so a process that made a million exports (the stress churn) can
// hold a pipe whose number one of them had. Counted by inode number alone,
// that pipe kept a freed, closed export's 2 MiB "allocated", and the churn
// reported used_delta_bytes=2097152 (seen in a cold run of the suite).
//
// The test makes that coincidence on purpose: pipes held open, then
// exports until one has an inode number one of the pipes has, then the
// export closed and the memory freed: cuMemGetInfo must count it free.
// Exit status 0 when it does, 1 when not, 77 (skip) when the counters
// could not be brought together within the limit.
#include "tests/gpu/driver_program.h"

#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <sched.h>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

constexpr size_t size = 2 << 20;
constexpr int pipes_held = 512;
constexpr long burn_limit = 8'000'000; // inode numbers a counter may be moved

ino_t inode_of(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

ino_t next_memfd_inode()
{
    int fd = memfd_create("probe", MFD_CLOEXEC);
    ino_t ino = inode_of(fd);
    close(fd);
    return ino;
}

ino_t next_pipe_inode()
{
    int p[2];
    if (pipe(p) != 0)
        return 0;
    ino_t ino = inode_of(p[0]);
    close(p[0]);
    close(p[1]);
    return ino;
}

} // namespace

int main()
{
    // One CPU: each counter then hands out its numbers in order.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    sched_setaffinity(0, sizeof(one), &one);

    use_primary_context();
    const long long used_at_start = device_bytes_in_use();
    CUdeviceptr p = 0;
    CHECK_CU_OR_EXIT(cuMemAlloc(&p, size), 1);

    // Bring the lower counter up to the higher one, then hold pipes whose
    // numbers the next exports will take.
    long burnt = 0;
    ino_t memfd_at = next_memfd_inode(), pipe_at = next_pipe_inode();
    while (pipe_at + pipes_held / 2 < memfd_at && burnt < burn_limit) {
        pipe_at = next_pipe_inode();
        ++burnt;
    }
    while (memfd_at + 8 < pipe_at && burnt < burn_limit) {
        memfd_at = next_memfd_inode();
        ++burnt;
    }
    std::set<ino_t> held_inodes;
    std::vector<int> held_fds;
    for (int i = 0; i < pipes_held; ++i) {
        int fds[2];
        if (pipe(fds) != 0)
            break;
        held_inodes.insert(inode_of(fds[0]));
        held_fds.push_back(fds[0]);
        held_fds.push_back(fds[1]);
    }
    int coinciding = -1;
    for (int attempt = 0; attempt < 4 * pipes_held && coinciding < 0; ++attempt) {
        int fd = -1;
        CHECK_CU_OR_EXIT(
            cuMemGetHandleForAddressRange(&fd, p, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0), 1);
        if (held_inodes.count(inode_of(fd)))
            coinciding = fd;
        else
            close(fd);
    }
    if (coinciding < 0) {
        std::printf("SKIP: no export took a held pipe's inode number (counters %lu and %lu, "
                    "%ld numbers moved)\n",
                    static_cast<unsigned long>(memfd_at), static_cast<unsigned long>(pipe_at),
                    burnt);
        return 77;
    }
    std::printf("export inode %lu is also an open pipe's\n",
                static_cast<unsigned long>(inode_of(coinciding)));
    close(coinciding);
    CHECK_CU_OR_EXIT(cuMemFree(p), 1);
    const long long used = device_bytes_in_use();
    for (int fd : held_fds)
        close(fd);
    if (used != used_at_start) {
        std::printf("FAIL: %lld bytes still used after the free and the export's close\n",
                    used - used_at_start);
        return 1;
    }
    std::printf("PASS: the freed memory is given back once its export closed\n");
    return 0;
}
