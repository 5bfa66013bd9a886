// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Run under the shim without touching CUDA: the shim must have done
// nothing at load time (no thread started, no event log created). It then
// resolves an unrelated symbol through the interposed dlsym, including with
// RTLD_NEXT, which must still answer relative to the caller.
//
// usage: load_idle [THREADS]: THREADS (default 1) is the count of a plain
// run's /proc/self/task (an emulator such as qemu-user adds threads of its
// own there).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

static int thread_count()
{
    int count = 0;
    DIR *tasks = opendir("/proc/self/task");
    if (!tasks)
        return -1;
    while (dirent *entry = readdir(tasks))
        if (entry->d_name[0] != '.')
            ++count;
    closedir(tasks);
    return count;
}

int main(int argc, char **argv)
{
    const int expected_threads = argc > 1 ? atoi(argv[1]) : 1;
    int threads = thread_count();
    const char *events = getenv("GDRHOOK_EVENTS");
    struct stat st;
    bool log_exists = events && stat(events, &st) == 0;

    // Unrelated lookups pass straight through.
    void *puts_default = dlsym(RTLD_DEFAULT, "puts");
    void *puts_next = dlsym(RTLD_NEXT, "puts");
    bool lookups_ok = puts_default && puts_default == puts_next &&
                      puts_default == reinterpret_cast<void *>(&puts);

    printf("threads=%d log_exists=%d lookups_ok=%d\n", threads, log_exists, lookups_ok);
    return threads == expected_threads && !log_exists && lookups_ok ? 0 : 1;
}
