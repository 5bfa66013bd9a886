// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/private_files.h"

#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <mutex>
#include <new>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace gdrhook {
namespace {

enum class State { unstarted, starting, serving, unavailable };

struct PrivateThread {
    std::mutex one_call; // callers, one at a time
    std::mutex lock;     // the hand-over below
    std::condition_variable changed;
    const std::function<void()> *call = nullptr; // set by the caller, cleared when done
    State state = State::unstarted;              // under one_call, and lock once starting
};

// Set on the private thread itself.
thread_local bool on_private_thread = false;

// Never destroyed: the log's last flush runs in exit handlers.
PrivateThread &private_thread()
{
    static PrivateThread *thread = new PrivateThread;
    return *thread;
}

// The copies unshare() made of the program's descriptors: ours to close,
// which leaves the program's own untouched (and, the lock owner being the
// table, its POSIX locks too).
void close_copies_of_program_descriptors()
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 0u, ~0u, 0u) == 0)
        return;
#endif
    // thread-self: /proc/self is the thread group's leader, whose table
    // is the program's, not this thread's.
    std::vector<int> numbers;
    if (DIR *dir = opendir("/proc/thread-self/fd")) {
        const int listing = dirfd(dir);
        while (const dirent *entry = readdir(dir))
            if (entry->d_name[0] != '.' && atoi(entry->d_name) != listing)
                numbers.push_back(atoi(entry->d_name));
        closedir(dir);
    }
    for (int fd : numbers)
        close(fd);
}

void serve(PrivateThread &t, bool unshared)
{
    pthread_setname_np(pthread_self(), "gdrhook-files");
    on_private_thread = true;
    std::unique_lock<std::mutex> lock(t.lock);
    t.state = unshared ? State::serving : State::unavailable;
    t.changed.notify_all();
    if (!unshared)
        return;
    for (;;) {
        t.changed.wait(lock, [&] { return t.call != nullptr; });
        (*t.call)();
        t.call = nullptr;
        t.changed.notify_all();
    }
}

// Under one_call.
void start(PrivateThread &t)
{
    {
        std::lock_guard<std::mutex> lock(t.lock);
        t.state = State::starting;
    }
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous); // inherited by the thread
    try {
        std::thread([&t] {
            const bool unshared = unshare(CLONE_FILES) == 0;
            if (unshared)
                close_copies_of_program_descriptors();
            serve(t, unshared);
        }).detach();
        std::unique_lock<std::mutex> lock(t.lock);
        t.changed.wait(lock, [&] { return t.state != State::starting; });
    } catch (const std::exception &) {
        // No thread (a sandbox, the thread limit): calls run on the caller.
        std::lock_guard<std::mutex> lock(t.lock);
        t.state = State::unavailable;
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

} // namespace

bool on_private_files_thread()
{
    return on_private_thread;
}

void run_with_private_files(const std::function<void()> &call)
{
    if (on_private_thread) {
        call(); // a call made from inside one
        return;
    }
    PrivateThread &t = private_thread();
    std::lock_guard<std::mutex> one(t.one_call);
    if (t.state == State::unstarted)
        start(t);
    std::unique_lock<std::mutex> lock(t.lock);
    if (t.state != State::serving) {
        lock.unlock();
        call();
        return;
    }
    t.call = &call;
    t.changed.notify_all();
    t.changed.wait(lock, [&] { return t.call == nullptr; });
}

void private_files_after_fork_in_child()
{
    // Only the forking thread exists here; the locks may have been held by
    // threads that do not. A fresh object is the only portable way back.
    PrivateThread &t = private_thread();
    new (&t.one_call) std::mutex();
    new (&t.lock) std::mutex();
    new (&t.changed) std::condition_variable();
    t.call = nullptr;
    t.state = State::unstarted;
}

} // namespace gdrhook
