// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// libexit_gate.so: preloaded after the shim, it is the next _exit and
// _Exit the shim calls once it has written what was recorded and closed
// the log to other threads (hook/process_endings.cpp). That is the moment
// of the race it makes happen every run: there it lets the frees the fake
// driver holds go on (fake_cuda_hold_frees), so that another thread's free,
// in flight when the process began to end, now returns from the driver,
// after the shim's ending. It waits up to 300 ms (less than the second
// after which the shim lets such threads write again) for that thread to
// say its free returned (exit_gate_free_returned()), prints
// "exit_gate: released=1 free_returned=0|1" on stderr and ends the process.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <dlfcn.h>
#include <mutex>
#include <sys/syscall.h>
#include <unistd.h>

namespace {

std::mutex mutex;
std::condition_variable changed;
bool free_returned = false;

[[noreturn]] void release_then_end(const char *name, int status)
{
    auto hold = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "fake_cuda_hold_frees"));
    bool returned = false;
    if (hold) {
        hold(0);
        std::unique_lock<std::mutex> lock(mutex);
        returned =
            changed.wait_for(lock, std::chrono::milliseconds(300), [] { return free_returned; });
    }
    std::fprintf(stderr, "exit_gate: released=%d free_returned=%d\n", hold != nullptr,
                 int(returned));
    if (auto next = reinterpret_cast<void (*)(int)>(dlsym(RTLD_NEXT, name)))
        next(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

} // namespace

extern "C" __attribute__((visibility("default"))) void exit_gate_free_returned()
{
    {
        std::lock_guard<std::mutex> lock(mutex);
        free_returned = true;
    }
    changed.notify_all();
}

extern "C" __attribute__((visibility("default"))) void _exit(int status)
{
    release_then_end("_exit", status);
}

extern "C" __attribute__((visibility("default"))) void _Exit(int status)
{
    release_then_end("_Exit", status);
}
