// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Frees GPU memory and then ends one way or another, for the tests that
// check that every free reaches the log however a process ends
// (tests/shim/test_recovery.cpp, tests/stress/test_kill_recovery.cpp).
//
//   endings ENDING FREES COUNT_FILE [THREADS]
//
// Allocates and frees FREES buffers of 2 MiB, one after the other, then
// ends with ENDING:
//   exit, _exit, _Exit, exec (/bin/true), abort, segv (a write through a
//   null pointer), sigterm, sigkill (each raised with its default action),
//   fork_exit (4 more buffers held across a fork; the child, refused by the
//   driver, tries to free one and calls _exit; the parent waits, frees the
//   4 and exits), threads_exit (THREADS threads free for ever;
//   the main thread calls _exit after FREES frees in all), churn (THREADS
//   threads free for ever, until the process is killed from outside),
//   late_free__exit and late_free__Exit (one more buffer, whose free on
//   another thread the fake driver holds: the main thread ends with _exit
//   or _Exit while it is in flight; under libexit_gate.so, preloaded after
//   the shim, the free returns from the driver after the shim's ending).
//
// Each free is counted in COUNT_FILE, a file the program maps itself: the
// count is stored after the free returned, so a process killed at any
// moment has counted every free it finished but those of its threads
// between the free and the count (at most one each). The second word is
// a forked child's, which the driver lets free nothing: it stays 0.
#include "cuda_checks.h"

#include <cuda.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

constexpr size_t buffer_bytes = 2 << 20;
constexpr int held_across_fork = 4; // fork_exit

std::atomic<long> *counts = nullptr; // [0] this process, [1] a forked child

void alloc_and_free(std::atomic<long> &count)
{
    CUdeviceptr p = 0;
    CHECK_CU_OR_EXIT(cuMemAlloc(&p, buffer_bytes), 3);
    CHECK_CU_OR_EXIT(cuMemFree(p), 3);
    count.fetch_add(1, std::memory_order_release);
}

void free_for_ever(CUcontext context, std::atomic<long> &count)
{
    CHECK_CU_OR_EXIT(cuCtxSetCurrent(context), 3);
    for (;;)
        alloc_and_free(count);
}

std::atomic<long> *map_counts(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ftruncate(fd, 4096) != 0)
        return nullptr;
    void *memory = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return memory == MAP_FAILED ? nullptr : static_cast<std::atomic<long> *>(memory);
}

int *volatile null_pointer = nullptr;

template <typename F> F test_control(const char *name)
{
    auto found = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
    if (!found) {
        fprintf(stderr, "endings: %s not found (the fake driver and libexit_gate.so)\n", name);
        exit(2);
    }
    return found;
}

// A free in flight on another thread, held in the fake driver, as the
// main thread ends the process with `end`.
[[noreturn]] void end_with_free_in_flight(void (*end)(int))
{
    auto hold = test_control<void (*)(int)>("fake_cuda_hold_frees");
    auto wait_held = test_control<void (*)(long)>("fake_cuda_wait_frees_held");
    auto returned = test_control<void (*)()>("exit_gate_free_returned");
    CUdeviceptr late = 0;
    CHECK_CU_OR_EXIT(cuMemAlloc(&late, buffer_bytes), 3);
    hold(1);
    std::thread([=] {
        CHECK_CU_OR_EXIT(cuMemFree(late), 3);
        counts[0].fetch_add(1, std::memory_order_release);
        returned();
    }).detach();
    wait_held(1);
    end(0);
    __builtin_unreachable();
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: endings ENDING FREES COUNT_FILE [THREADS]\n");
        return 2;
    }
    const std::string ending = argv[1];
    const long frees = atol(argv[2]);
    const int threads = argc > 4 ? atoi(argv[4]) : 16;
    counts = map_counts(argv[3]);
    if (!counts) {
        fprintf(stderr, "endings: cannot map %s: %s\n", argv[3], strerror(errno));
        return 2;
    }

    CHECK_CU_OR_EXIT(cuInit(0), 3);
    CUdevice device;
    CHECK_CU_OR_EXIT(cuDeviceGet(&device, 0), 3);
    CUcontext context;
    CHECK_CU_OR_EXIT(cuDevicePrimaryCtxRetain(&context, device), 3);
    CHECK_CU_OR_EXIT(cuCtxSetCurrent(context), 3);

    if (ending == "threads_exit" || ending == "churn") {
        for (int t = 0; t < threads; ++t)
            std::thread(free_for_ever, context, std::ref(counts[0])).detach();
        if (ending == "churn")
            for (;;)
                pause();
        while (counts[0].load(std::memory_order_acquire) < frees)
            std::this_thread::yield();
        _exit(0);
    }

    for (long i = 0; i < frees; ++i)
        alloc_and_free(counts[0]);

    if (ending == "late_free__exit")
        end_with_free_in_flight(_exit);
    if (ending == "late_free__Exit")
        end_with_free_in_flight(_Exit);
    if (ending == "exit")
        exit(0);
    if (ending == "_exit")
        _exit(0);
    if (ending == "_Exit")
        _Exit(0);
    if (ending == "exec") {
        execl("/bin/true", "true", static_cast<char *>(nullptr));
        return 4;
    }
    if (ending == "abort")
        abort();
    if (ending == "segv")
        *null_pointer = 1;
    if (ending == "sigterm")
        raise(SIGTERM);
    if (ending == "sigkill")
        raise(SIGKILL);
    if (ending == "fork_exit") {
        // Buffers held (and pinned, under pin-on-alloc) across the fork. The
        // driver refuses every call of a child forked after cuInit
        // (CUDA_ERROR_NOT_INITIALIZED, as measured on an H100): the child
        // tries to free one, then ends with _exit holding its copies of the
        // pins; the parent frees them afterwards.
        CUdeviceptr held[held_across_fork];
        for (CUdeviceptr &p : held)
            CHECK_CU_OR_EXIT(cuMemAlloc(&p, buffer_bytes), 3);
        pid_t child = fork();
        if (child == 0)
            _exit(cuMemFree(held[0]) == CUDA_ERROR_NOT_INITIALIZED ? 0 : 6);
        int status = 0;
        waitpid(child, &status, 0);
        for (CUdeviceptr p : held) {
            CHECK_CU_OR_EXIT(cuMemFree(p), 3);
            counts[0].fetch_add(1, std::memory_order_release);
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 5;
    }
    fprintf(stderr, "endings: unknown ending '%s'\n", ending.c_str());
    return 2;
}
