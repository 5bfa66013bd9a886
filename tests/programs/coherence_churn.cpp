// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The coherence check (docs/design.md), runnable on the fake driver and on a GPU.
// Several threads free and reallocate buffers of one size in a loop (the
// driver hands the same address back) and look the buffer up between the
// allocation and the free, the way a communication library's registration
// cache is used. Two ways to look up:
//
//   coherence_churn gdrhook  the library's cache: gdrhook_get()/put() of the
//                            preloaded shim (run under LD_PRELOAD with
//                            GDRHOOK_PIN=alloc GDRHOOK_BACKEND=dmabuf)
//   coherence_churn naive    a cache that never learns of frees: the first
//                            lookup of an address exports a dma-buf and
//                            keeps it, keyed by address (what a cache
//                            without a hook does)
//   coherence_churn own_export  no cache: each allocation exports a dma-buf
//                            at once and each free closes it just before
//                            cuMemFree, as the shim's pin on allocation
//                            does, but by the program itself; prints the
//                            closes' p50, p99 and max (what the release
//                            costs under this churn, without gdrhook)
//   coherence_churn leak     allocates `threads` buffers and exits without
//                            freeing them (what the shim unpins at exit)
//   coherence_churn hold     allocates them and waits to be killed
//   coherence_churn sleep    allocates them, sleeps `iterations` ms, frees
//                            them and exits (a quiet process with pins
//                            held, for the shim's periodic samples)
//   coherence_churn fork     gdrhook mode with `threads` buffers held (and
//                            pinned) throughout; once the threads are half
//                            way, fork(): the parent's threads go on and
//                            free what it holds; the child, which the
//                            driver refuses (CUDA_ERROR_NOT_INITIALIZED),
//                            makes three calls, prints its line and exits
//   coherence_churn fork_exec gdrhook mode after a fork whose child, while
//                            `threads` buffers are held and pinned, only
//                            execs /bin/true (as a subprocess module does)
//   coherence_churn exit     gdrhook mode, then frees `threads` more buffers
//   coherence_churn _exit    in a burst and at once calls exit(0) or
//                            _exit(0) with those events still queued
//   coherence_churn spin     gdrhook mode that never ends: waits to be
//                            killed in the middle of the churn
//   coherence_churn free_kept  `iterations` rounds on one thread: allocate
//                            `threads` buffers, look each up (which pins
//                            it; no lookup without the shim), free them
//                            one by one and read the free
//                            memory as each cuMemFree returns; prints
//                            free_kept_max=BYTES, the most a freed buffer
//                            still held then (an open export keeps freed
//                            memory allocated)
//   coherence_churn lookup_in_free  `iterations` rounds (fake driver only):
//                            a thread frees a buffer while the driver holds
//                            the free open (fake_cuda_hold_frees, as a real
//                            free waits for the device's work); the main
//                            thread looks the buffer up in that window,
//                            which pins it anew, lets the free finish,
//                            allocates the address again and looks it up:
//                            the pin made during the free must be gone
//
// Every lookup's registration is checked against the driver's buffer ID of
// the address right now: a different one is a stale registration. At the
// end it prints the stale count and how much GPU memory (cuMemGetInfo) is
// still in use compared with the start, once every buffer has been freed.
// The exit status is 0 when the run completed; the verdict is the caller's.
#include "cuda_checks.h"
#include "used_delta.h"

#include <cuda.h>
#include <dlfcn.h>

#include "include/gdrhook.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

struct Options {
    std::string mode;
    int threads = 4;
    int iterations = 200;
    size_t size = 2 << 20;
};

std::atomic<long> lookups{0}, stale{0}, same_address{0}, frees{0};
// Iterations done by all threads (fork mode forks half way).
std::atomic<long> iterations_done{0};

uint64_t buffer_id(CUdeviceptr p)
{
    unsigned long long id = 0;
    CHECK_CU_OR_EXIT(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p), 2);
    return id;
}

// The library's cache, found in the preloaded shim.
struct GdrhookApi {
    decltype(&gdrhook_get) get = nullptr;
    decltype(&gdrhook_put) put = nullptr;
    decltype(&gdrhook_get_stats) stats = nullptr;
};
GdrhookApi gdrhook_api;

// A registration cache that never hears of frees: address -> (fd, the
// buffer id it was exported for).
struct NaiveCache {
    std::mutex mutex;
    std::map<CUdeviceptr, std::pair<int, uint64_t>> entries;

    uint64_t lookup(CUdeviceptr p, size_t size)
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto it = entries.find(p);
        if (it != entries.end())
            return it->second.second; // a hit: whatever was registered here
        int fd = -1;
        CHECK_CU_OR_EXIT(
            cuMemGetHandleForAddressRange(&fd, p, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0), 2);
        uint64_t id = buffer_id(p);
        entries[p] = {fd, id};
        return id;
    }
};
NaiveCache naive;

void churn(const Options &options, CUcontext context)
{
    CHECK_CU_OR_EXIT(cuCtxSetCurrent(context), 2);
    CUdeviceptr previous = 0;
    const bool forever = options.mode == "spin" || options.mode == "threads_exit";
    for (int i = 0; forever || i < options.iterations; ++i) {
        CUdeviceptr p = 0;
        CHECK_CU_OR_EXIT(cuMemAlloc(&p, options.size), 2);
        if (p == previous)
            same_address.fetch_add(1, std::memory_order_relaxed);
        previous = p;
        const uint64_t now = buffer_id(p);
        uint64_t registered = 0;
        if (options.mode != "naive") {
            gdrhook_registration reg;
            int rc = gdrhook_api.get(reinterpret_cast<void *>(p), options.size, &reg);
            if (rc != 0) {
                fprintf(stderr, "coherence_churn: gdrhook_get failed: %s\n", strerror(-rc));
                exit(2);
            }
            registered = reg.buffer_id;
            gdrhook_api.put(&reg);
        } else {
            registered = naive.lookup(p, options.size);
        }
        lookups.fetch_add(1, std::memory_order_relaxed);
        if (registered != now)
            stale.fetch_add(1, std::memory_order_relaxed);
        CHECK_CU_OR_EXIT(cuMemFree(p), 2);
        frees.fetch_add(1, std::memory_order_relaxed);
        iterations_done.fetch_add(1, std::memory_order_relaxed);
    }
}

// own_export: every close(2) of a dma-buf, in ns, from all threads.
std::mutex release_mutex;
std::vector<uint64_t> release_ns;

uint64_t now_ns()
{
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

// The shim's pinned free done by hand: the export right after the
// allocation, the close right before the free. Its closes' times are the
// floor a pinned free's unpin is compared with under the same load, so
// the driver sees what it sees in gdrhook mode besides the shim: the
// program's buffer-ID query, and SYNC_MEMOPS set as a library registering
// the buffer for RDMA sets it (UCX's cuda_copy, gdrcopy's users).
void own_export_churn(const Options &options, CUcontext context)
{
    CHECK_CU_OR_EXIT(cuCtxSetCurrent(context), 2);
    std::vector<uint64_t> mine;
    mine.reserve(static_cast<size_t>(options.iterations));
    for (int i = 0; i < options.iterations; ++i) {
        CUdeviceptr p = 0;
        CHECK_CU_OR_EXIT(cuMemAlloc(&p, options.size), 2);
        int fd = -1;
        CHECK_CU_OR_EXIT(cuMemGetHandleForAddressRange(&fd, p, options.size,
                                                       CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
                         2);
        (void)buffer_id(p);
        unsigned int sync = 1;
        CHECK_CU_OR_EXIT(cuPointerSetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p), 2);
        lookups.fetch_add(1, std::memory_order_relaxed);
        const uint64_t before = now_ns();
        const int closed = close(fd);
        mine.push_back(now_ns() - before);
        if (closed != 0) {
            perror("coherence_churn: close of a dma-buf");
            exit(2);
        }
        CHECK_CU_OR_EXIT(cuMemFree(p), 2);
        frees.fetch_add(1, std::memory_order_relaxed);
    }
    std::lock_guard<std::mutex> lock(release_mutex);
    release_ns.insert(release_ns.end(), mine.begin(), mine.end());
}

// `options.threads` threads, each running `body` (churn() by default).
void run_threads(const Options &options, CUcontext context,
                 void (*body)(const Options &, CUcontext) = churn)
{
    std::vector<std::thread> threads;
    for (int t = 0; t < options.threads; ++t)
        threads.emplace_back(body, std::cref(options), context);
    for (std::thread &t : threads)
        t.join();
}

std::vector<CUdeviceptr> allocate(int count, size_t size)
{
    std::vector<CUdeviceptr> buffers(static_cast<size_t>(count));
    for (CUdeviceptr &p : buffers)
        CHECK_CU_OR_EXIT(cuMemAlloc(&p, size), 2);
    return buffers;
}

void free_all(const std::vector<CUdeviceptr> &buffers)
{
    for (CUdeviceptr p : buffers) {
        CHECK_CU_OR_EXIT(cuMemFree(p), 2);
        frees.fetch_add(1, std::memory_order_relaxed);
    }
}

// One run of a mode: what every mode may use, and what the closing report
// prints beside the counters.
struct Run {
    const Options &options;
    CUdevice device;
    CUcontext context;
    const char *side = "";
    int child_status = -1;
};

// A mode's function returns the exit status of a run that ends there, or
// this for a run whose counters the closing report prints.
constexpr int report_at_end = -1;

int wait_for(pid_t child)
{
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int churn_threads(Run &run)
{
    run_threads(run.options, run.context);
    return report_at_end;
}

int own_export(Run &run)
{
    run_threads(run.options, run.context, own_export_churn);
    std::sort(release_ns.begin(), release_ns.end());
    auto percentile = [](double p) {
        if (release_ns.empty())
            return 0.0;
        const size_t at =
            std::min(release_ns.size() - 1, static_cast<size_t>(p * release_ns.size()));
        return release_ns[at] / 1000.0;
    };
    printf("releases=%zu release_p50_us=%.1f release_p99_us=%.1f release_max_us=%.1f\n",
           release_ns.size(), percentile(0.5), percentile(0.99),
           release_ns.empty() ? 0.0 : release_ns.back() / 1000.0);
    return report_at_end;
}

int leak_or_hold(Run &run)
{
    const Options &options = run.options;
    for (int i = 0; i < options.threads; ++i) {
        CUdeviceptr p = 0;
        CHECK_CU_OR_EXIT(cuMemAlloc(&p, options.size), 2);
    }
    printf("mode=%s buffers=%d size=%zu\n", options.mode.c_str(), options.threads, options.size);
    fflush(stdout);
    while (options.mode == "hold")
        pause();
    return 0;
}

// Holds buffers (pinned) for `iterations` ms and frees them: sleep ends
// then, a quiet process for the shim's periodic samples; free_then_wait
// stays as long again, and the unpins must come at the frees, not when the
// process ends.
int hold_then_free(Run &run)
{
    const Options &options = run.options;
    std::vector<CUdeviceptr> held = allocate(options.threads, options.size);
    std::this_thread::sleep_for(std::chrono::milliseconds(options.iterations));
    free_all(held);
    if (options.mode == "sleep") {
        printf("mode=sleep buffers=%d size=%zu ms=%d\n", options.threads, options.size,
               options.iterations);
        return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(options.iterations));
    printf("mode=free_then_wait buffers=%d ms=%d\n", options.threads, options.iterations);
    return 0;
}

// Pins held across the fork, and live threads in the middle of their
// churn at the moment of it.
int fork_midway(Run &run)
{
    const Options &options = run.options;
    std::vector<CUdeviceptr> held = allocate(options.threads, options.size);
    std::vector<std::thread> threads;
    for (int t = 0; t < options.threads; ++t)
        threads.emplace_back(churn, std::cref(options), run.context);
    const long half = static_cast<long>(options.threads) * options.iterations / 2;
    while (iterations_done.load(std::memory_order_relaxed) < half)
        std::this_thread::yield();
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
        perror("coherence_churn: fork");
        return 2;
    }
    if (child == 0) {
        // The parent's threads do not exist here; its counts do. Handles
        // of threads that are not in this process: forget them (neither
        // join nor detach may touch what they point to).
        for (std::thread &t : threads)
            new (&t) std::thread();
        lookups = stale = same_address = frees = 0;
        // The driver refuses a child forked after cuInit: every call
        // answers CUDA_ERROR_NOT_INITIALIZED (measured on an H100). The
        // shim must pass that on unchanged; the child then exits,
        // releasing its copies of the parent's pins.
        CUdeviceptr p = 0;
        long refused = (cuCtxSetCurrent(run.context) == CUDA_ERROR_NOT_INITIALIZED) +
                       (cuMemAlloc(&p, options.size) == CUDA_ERROR_NOT_INITIALIZED) +
                       (cuMemFree(held.front()) == CUDA_ERROR_NOT_INITIALIZED);
        printf("mode=fork side=child refused=%ld of 3 frees=0 stale=0 verify_mismatches=0\n",
               refused);
        fflush(stdout);
        exit(0);
    }
    run.side = " side=parent";
    for (std::thread &t : threads)
        t.join();
    free_all(held);
    run.child_status = wait_for(child);
    return run.child_status < 0 ? 2 : report_at_end;
}

// A child that, while buffers are held and pinned, only execs /bin/true
// (as a subprocess module does); then the churn.
int fork_exec(Run &run)
{
    const Options &options = run.options;
    std::vector<CUdeviceptr> held = allocate(options.threads, options.size);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        execl("/bin/true", "true", static_cast<char *>(nullptr));
        _exit(127);
    }
    run.child_status = wait_for(child);
    if (run.child_status < 0)
        return 2;
    run_threads(options, run.context);
    free_all(held);
    return report_at_end;
}

// Children that end with _exit holding their copies of the parent's pins,
// one a round (iterations, at least 1). Each round's new pin is recorded
// once the shim's worker has gone to sleep (it lingers 1 ms after its last
// event), right before the fork: often still in the queue then, so the
// fork must write it out for the child to know it. Child k inherits
// threads - 1 + k pins.
int fork_exit(Run &run)
{
    const Options &options = run.options;
    std::vector<CUdeviceptr> held = allocate(options.threads - 1, options.size);
    for (int round = 0; round < std::max(1, options.iterations); ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        held.push_back(allocate(1, options.size).front());
        fflush(stdout);
        pid_t child = fork();
        if (child == 0)
            _exit(0);
        const int ended = wait_for(child);
        if (ended < 0)
            return 2;
        run.child_status = std::max(run.child_status, ended);
    }
    free_all(held);
    return report_at_end;
}

// The driver refuses a free (FAKECUDA_FAIL in the tests): the memory is
// still allocated, and the free that follows ends it.
int refused_free(Run &run)
{
    std::vector<CUdeviceptr> held = allocate(run.options.threads, run.options.size);
    long refused = 0;
    for (CUdeviceptr p : held) {
        if (cuMemFree(p) != CUDA_SUCCESS) {
            ++refused;
            CHECK_CU_OR_EXIT(cuMemFree(p), 2);
        }
        frees.fetch_add(1);
    }
    printf("refused=%ld ", refused);
    return report_at_end;
}

// Looks p up through the shim and counts a registration of another buffer
// as stale.
void look_up_checked(CUdeviceptr p, size_t size)
{
    gdrhook_registration reg;
    if (gdrhook_api.get(reinterpret_cast<void *>(p), size, &reg) != 0)
        exit(2);
    lookups.fetch_add(1);
    if (reg.buffer_id != buffer_id(p))
        stale.fetch_add(1);
    gdrhook_api.put(&reg);
}

// Pinned allocations die with their context (no free of their own); the
// primary context's next allocations get the addresses back, and a lookup
// must not find the dead registrations. Prints the memory a dead context
// leaves in use, at most: its allocations are freed when cuCtxDestroy
// returns, unless an open export still holds them.
int ctx_destroy(Run &run)
{
    const Options &options = run.options;
    long long kept_max = 0;
    for (int round = 0; round < options.iterations; ++round) {
        size_t free_before = 0, free_after = 0, total = 0;
        CHECK_CU_OR_EXIT(cuMemGetInfo(&free_before, &total), 2);
        CUcontext own = nullptr;
        CHECK_CU_OR_EXIT(cuCtxCreate(&own, nullptr, 0, run.device), 2);
        std::vector<CUdeviceptr> dead = allocate(options.threads, options.size);
        CHECK_CU_OR_EXIT(cuCtxDestroy_v2(own), 2);
        CHECK_CU_OR_EXIT(cuCtxSetCurrent(run.context), 2);
        CHECK_CU_OR_EXIT(cuMemGetInfo(&free_after, &total), 2);
        kept_max = std::max(kept_max, static_cast<long long>(free_before) -
                                          static_cast<long long>(free_after));
        std::vector<CUdeviceptr> fresh = allocate(options.threads, options.size);
        for (CUdeviceptr p : fresh) {
            same_address.fetch_add(std::count(dead.begin(), dead.end(), p));
            look_up_checked(p, options.size);
        }
        free_all(fresh);
    }
    printf("teardown_kept_max=%lld ", kept_max);
    return report_at_end;
}

// Without the shim a buffer's memory is free when cuMemFree returns; with
// it, the buffer's pin must be gone by then too.
int free_kept(Run &run)
{
    const Options &options = run.options;
    long long kept_max = 0;
    for (int round = 0; round < options.iterations; ++round) {
        std::vector<CUdeviceptr> buffers = allocate(options.threads, options.size);
        for (CUdeviceptr p : buffers) {
            gdrhook_registration reg;
            if (!gdrhook_api.get) // no shim
                break;
            if (gdrhook_api.get(reinterpret_cast<void *>(p), options.size, &reg) != 0)
                exit(2);
            lookups.fetch_add(1);
            gdrhook_api.put(&reg);
        }
        for (CUdeviceptr p : buffers) {
            size_t free_before = 0, free_after = 0, total = 0;
            CHECK_CU_OR_EXIT(cuMemGetInfo(&free_before, &total), 2);
            CHECK_CU_OR_EXIT(cuMemFree(p), 2);
            CHECK_CU_OR_EXIT(cuMemGetInfo(&free_after, &total), 2);
            frees.fetch_add(1);
            // What the free gave back, short of the buffer's size.
            kept_max = std::max(kept_max, static_cast<long long>(options.size) -
                                              (static_cast<long long>(free_after) -
                                               static_cast<long long>(free_before)));
        }
    }
    printf("free_kept_max=%lld ", kept_max);
    return report_at_end;
}

int lookup_in_free(Run &run)
{
    const Options &options = run.options;
    using HoldFrees = void (*)(int);
    using FreesHeld = long (*)();
    auto hold_frees = reinterpret_cast<HoldFrees>(dlsym(RTLD_DEFAULT, "fake_cuda_hold_frees"));
    auto frees_held = reinterpret_cast<FreesHeld>(dlsym(RTLD_DEFAULT, "fake_cuda_frees_held"));
    if (!hold_frees || !frees_held) {
        fprintf(stderr, "coherence_churn: lookup_in_free needs the fake driver\n");
        return 2;
    }
    long looked_up_in_free = 0;
    for (int round = 0; round < options.iterations; ++round) {
        CUdeviceptr p = allocate(1, options.size)[0];
        hold_frees(1);
        std::thread freeing([&] {
            CHECK_CU_OR_EXIT(cuCtxSetCurrent(run.context), 2);
            CHECK_CU_OR_EXIT(cuMemFree(p), 2);
        });
        while (frees_held() == 0)
            std::this_thread::yield();
        gdrhook_registration reg;
        if (gdrhook_api.get(reinterpret_cast<void *>(p), options.size, &reg) == 0) {
            ++looked_up_in_free; // pinned while the free was under way
            gdrhook_api.put(&reg);
        }
        hold_frees(0);
        freeing.join();
        frees.fetch_add(1);
        CUdeviceptr again = allocate(1, options.size)[0];
        same_address.fetch_add(again == p);
        look_up_checked(again, options.size);
        free_all({again});
    }
    printf("looked_up_in_free=%ld ", looked_up_in_free);
    return report_at_end;
}

// Threads free flat out while the main thread ends the process: every free
// they finished before it did must be in the log.
int threads_exit(Run &run)
{
    const Options &options = run.options;
    for (int t = 0; t < options.threads; ++t)
        std::thread(churn, std::cref(options), run.context).detach();
    while (iterations_done.load(std::memory_order_relaxed) < options.iterations)
        std::this_thread::yield();
    printf("mode=threads_exit threads=%d frees_before_exit=%ld\n", options.threads, frees.load());
    fflush(stdout);
    _exit(0);
}

int spin(Run &run)
{
    printf("mode=spin threads=%d\n", run.options.threads);
    fflush(stdout);
    run_threads(run.options, run.context); // until killed
    return report_at_end;
}

// The churn, then a burst of frees and out at once the mode's way: their
// events are still in the queue (or in the worker's hands) when the
// process ends.
int end_in_burst(Run &run)
{
    const Options &options = run.options;
    run_threads(options, run.context);
    free_all(allocate(options.threads, options.size));
    printf("mode=%s threads=%d iterations=%d frees=%ld stale=%ld\n", options.mode.c_str(),
           options.threads, options.iterations, frees.load(), stale.load());
    fflush(stdout);
    if (options.mode == "_exit")
        _exit(0);
    if (options.mode == "_Exit")
        _Exit(0);
    if (options.mode == "quick_exit")
        quick_exit(0);
    if (options.mode == "exec")
        execl("/bin/true", "true", static_cast<char *>(nullptr));
    exit(0);
}

struct Mode {
    const char *name;
    bool uses_gdrhook; // needs the shim's gdrhook_get()/put()
    int (*run)(Run &);
};

const Mode modes[] = {
    {"gdrhook", true, churn_threads},
    {"naive", false, churn_threads},
    {"own_export", false, own_export},
    {"leak", false, leak_or_hold},
    {"hold", false, leak_or_hold},
    {"sleep", false, hold_then_free},
    {"fork", true, fork_midway},
    {"fork_exec", true, fork_exec},
    {"exit", true, end_in_burst},
    {"_exit", true, end_in_burst},
    {"_Exit", true, end_in_burst},
    {"quick_exit", true, end_in_burst},
    {"exec", true, end_in_burst},
    {"fork_exit", true, fork_exit},
    {"threads_exit", true, threads_exit},
    {"ctx_destroy", true, ctx_destroy},
    {"refused_free", true, refused_free},
    {"free_then_wait", false, hold_then_free},
    {"spin", true, spin},
    {"lookup_in_free", true, lookup_in_free},
    {"free_kept", true, free_kept},
};

const Mode *find_mode(const char *name)
{
    for (const Mode &mode : modes)
        if (strcmp(mode.name, name) == 0)
            return &mode;
    return nullptr;
}

bool find_gdrhook_api()
{
    gdrhook_api.get = reinterpret_cast<decltype(&gdrhook_get)>(dlsym(RTLD_DEFAULT, "gdrhook_get"));
    gdrhook_api.put = reinterpret_cast<decltype(&gdrhook_put)>(dlsym(RTLD_DEFAULT, "gdrhook_put"));
    gdrhook_api.stats =
        reinterpret_cast<decltype(&gdrhook_get_stats)>(dlsym(RTLD_DEFAULT, "gdrhook_get_stats"));
    return gdrhook_api.get && gdrhook_api.put && gdrhook_api.stats;
}

// The closing line: the counters, the GPU memory still in use compared with
// the start (once the shim has had a moment for its last unpins), and what
// the shim's verify mode found.
void report(const Run &run, bool uses_gdrhook, long long used_at_start)
{
    const Options &options = run.options;
    const long long delta =
        settled_used_delta(used_at_start, [] { return device_bytes_in_use(2); });

    unsigned long long mismatches = 0;
    if (uses_gdrhook && gdrhook_api.stats) {
        gdrhook_stats s{};
        if (gdrhook_api.stats(&s, sizeof(s)) == 0)
            mismatches = s.verify_mismatches;
    }
    printf("mode=%s%s threads=%d iterations=%d size=%zu lookups=%ld frees=%ld same_address=%ld "
           "stale=%ld verify_mismatches=%llu used_delta_bytes=%lld",
           options.mode.c_str(), run.side, options.threads, options.iterations, options.size,
           lookups.load(), frees.load(), same_address.load(), stale.load(), mismatches, delta);
    if (run.child_status >= 0)
        printf(" child_status=%d", run.child_status);
    printf("\n");
}

} // namespace

int main(int argc, char **argv)
{
    const Mode *mode = argc >= 2 ? find_mode(argv[1]) : nullptr;
    if (!mode) {
        std::string names;
        for (const Mode &m : modes)
            names += (names.empty() ? "" : "|") + std::string(m.name);
        fprintf(stderr, "usage: coherence_churn %s [threads] [iterations] [MiB]\n", names.c_str());
        return 2;
    }
    Options options;
    options.mode = argv[1];
    if (argc > 2)
        options.threads = atoi(argv[2]);
    if (argc > 3)
        options.iterations = atoi(argv[3]);
    if (argc > 4)
        options.size = static_cast<size_t>(atoi(argv[4])) << 20;
    // free_kept runs without the shim too: the plain figure to compare.
    if (mode->uses_gdrhook && !find_gdrhook_api() && options.mode != "free_kept") {
        fprintf(stderr, "coherence_churn: %s mode needs LD_PRELOAD=libgdrhook.so\n", mode->name);
        return 2;
    }

    CHECK_CU_OR_EXIT(cuInit(0), 2);
    Run run{options, 0, nullptr};
    CHECK_CU_OR_EXIT(cuDeviceGet(&run.device, 0), 2);
    CHECK_CU_OR_EXIT(cuDevicePrimaryCtxRetain(&run.context, run.device), 2);
    CHECK_CU_OR_EXIT(cuCtxSetCurrent(run.context), 2);
    const long long used_at_start = device_bytes_in_use(2);
    const int status = mode->run(run);
    if (status != report_at_end)
        return status;
    report(run, mode->uses_gdrhook, used_at_start);
    CHECK_CU_OR_EXIT(cuDevicePrimaryCtxRelease(run.device), 2);
    return 0;
}
