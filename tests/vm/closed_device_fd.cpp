// SPDX-License-Identifier: GPL-2.0-only OR MIT
//
// closed_device_fd - runs in the VM guest under LD_PRELOAD=libgdrhook.so
// with GDRHOOK_BACKEND=kmod and GDRHOOK_PIN=alloc, linked against the fake
// driver. A program that closes descriptors it did not open (as a daemon's
// closefrom does) closes gdrhook's /dev/gdrhook, then gets that same number
// for a file of its own (a pipe, with bytes waiting in it). Its frees and
// allocations after that must not reach its file: no ioctl, no read of its
// bytes, no close (cache/base/owned_fd.h: the number alone does not say the
// file is still gdrhook's). Prints own_bytes_intact=0|1 and
// own_fd_open=0|1; exit status 0 when both are 1 and every CUDA call
// succeeded.
#include "tests/programs/cuda_checks.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <thread>
#include <unistd.h>

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "closed_device_fd: %s:%d: %s\n", __FILE__, __LINE__, #cond);           \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

namespace {

// The descriptor of /dev/gdrhook the shim opened; -1 when none or several.
int gdrhook_descriptor()
{
    DIR *dir = opendir("/proc/self/fd");
    EXPECT(dir != nullptr);
    int found = -1, count = 0;
    while (dirent *entry = readdir(dir)) {
        char target[256] = {};
        const std::string link = std::string("/proc/self/fd/") + entry->d_name;
        if (readlink(link.c_str(), target, sizeof(target) - 1) > 0 &&
            !strcmp(target, "/dev/gdrhook")) {
            found = atoi(entry->d_name);
            ++count;
        }
    }
    closedir(dir);
    return count == 1 ? found : -1;
}

} // namespace

int main()
{
    EXPECT(current_primary_context() != nullptr);

    // Pinned through the module as it is allocated: the shim's
    // /dev/gdrhook is open from here on.
    CUdeviceptr first = 0;
    EXPECT(cuMemAlloc(&first, 1 << 20) == CUDA_SUCCESS);
    const int number = gdrhook_descriptor();
    EXPECT(number >= 0);

    // The program takes the number back for a file of its own.
    EXPECT(close(number) == 0);
    int own[2];
    EXPECT(pipe(own) == 0);
    EXPECT(dup2(own[0], number) == number);
    close(own[0]);
    const char message[] = "the program's own bytes";
    EXPECT(write(own[1], message, sizeof message) == ssize_t(sizeof message));

    // A free of pinned memory, an allocation and its free: the shim's
    // unpins and pins, and its worker's reading of revocations after them.
    EXPECT(cuMemFree(first) == CUDA_SUCCESS);
    CUdeviceptr second = 0;
    EXPECT(cuMemAlloc(&second, 1 << 20) == CUDA_SUCCESS);
    EXPECT(cuMemFree(second) == CUDA_SUCCESS);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));

    const bool open = fcntl(number, F_GETFD) != -1;
    char got[sizeof message + 16] = {};
    ssize_t n = -1;
    if (open) {
        fcntl(number, F_SETFL, O_NONBLOCK);
        n = read(number, got, sizeof got);
    }
    const bool intact = n == ssize_t(sizeof message) && !memcmp(got, message, sizeof message);
    printf("own_fd_open=%d\nown_bytes_intact=%d\n", open, intact);
    fflush(stdout);
    // A shim that reads revocations from our pipe would wait in read() for
    // more, and its exit with it: a byte more lets a failed run end.
    EXPECT(write(own[1], "", 1) == 1);
    return open && intact ? 0 : 1;
}
