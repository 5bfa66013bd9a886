// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/core/runtime.h"

#include "cache/base/clock.h"
#include "cache/base/diagnostics.h"
#include "cache/events/event_clock.h"
#include "cache/prim/hot_arena.h"
#include "cache/core/process_sample.h"
#include "cache/core/public_api.h"
#include "cache/core/process_cache.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <utility>
#include <pthread.h>
#include <unistd.h>

namespace gdrhook {
namespace {

std::mutex init_lock;
std::string events_pattern; // GDRHOOK_EVENTS as written, for the forked child

void print_statistics()
{
    Runtime &rt = *hot_line.runtime;
    PipelineStats s = rt.pipeline->stats();
    diagnostics().info("events: {} queued, {} handled by their producer (queue "
                       "full or worker stopped), {} written; {} allocations "
                       "still tracked",
                       s.pushed, s.overflowed, s.written, rt.tracker.size());
}

void at_exit()
{
    if (hot_line.runtime_state.load(std::memory_order_acquire) != runtime_enabled)
        return;
    // Nothing stays pinned past the process: every registration is
    // unpinned, and logged, by the last drain of the queue.
    retire_shim_cache_at_exit();
    hot_line.runtime->pipeline->shutdown();
    print_statistics();
    print_shim_cache_statistics();
}

void before_fork()
{
    if (hot_line.runtime_state.load(std::memory_order_acquire) == runtime_enabled)
        hot_line.runtime->pipeline->before_fork();
}

void after_fork_in_parent()
{
    if (hot_line.runtime_state.load(std::memory_order_acquire) == runtime_enabled)
        hot_line.runtime->pipeline->after_fork_in_parent();
}

void after_fork_in_child()
{
    forget_cached_thread_ids();
    if (hot_line.runtime_state.load(std::memory_order_acquire) != runtime_enabled)
        return;
    Runtime &rt = *hot_line.runtime;
    rt.pid = static_cast<int>(getpid());
    rt.tracker.reinitialize_locks_after_fork();
    shim_cache_after_fork_in_child();
    rt.pipeline->after_fork_in_child(rt.pid);
    // A pattern with %p names a file of the child's own.
    std::string path = expand_path_pattern(events_pattern, rt.pid);
    if (path != rt.log.path()) {
        std::string error = rt.log.open(path);
        if (!error.empty())
            diagnostics().error("{}", error);
    }
    note_fork_in_child();
}

void initialize()
{
    const int pid = static_cast<int>(getpid());
    Diagnostics problems;
    Config config = parse_config([](const char *name) { return getenv(name); }, pid, problems);
    // Never freed (see runtime.h). With the other hot objects (hot_arena.h),
    // unless the shim only forwards: pass-through maps no 2 MiB region.
    void *memory = config.disabled ? ::operator new(sizeof(Runtime), std::align_val_t{alignof(Runtime)})
                                   : hot_arena_allocate(sizeof(Runtime), alignof(Runtime));
    auto *rt = new (memory) Runtime();
    rt->pid = pid;
    rt->config = std::move(config);
    if (const char *pattern = getenv("GDRHOOK_EVENTS"))
        events_pattern = pattern;
    set_diagnostics_level(rt->config.log_level);
    for (const std::string &line : problems)
        diagnostics().error("{}", line);

    if (rt->config.disabled) {
        hot_line.runtime = rt;
        hot_line.runtime_state.store(runtime_disabled, std::memory_order_release);
        return;
    }

    start_event_clock();
    std::string error = rt->log.open(rt->config.events_path);
    if (!error.empty())
        diagnostics().error("{}; events are not logged", error);
    rt->pipeline = new (hot_arena_allocate(sizeof(EventPipeline), alignof(EventPipeline)))
        EventPipeline(rt->config.queue_capacity, rt->log, rt->pid);
    set_pin_on_alloc(rt->config.pin == PinPolicy::alloc);
    if (rt->config.pin != PinPolicy::off) {
        rt->pipeline->set_handler(note_logged_pin);
        rt->pipeline->set_batch_hook(unpin_batch); // eager unpin, once per batch
    }
    // Samples only where they are written down.
    if (rt->config.sample_ms && rt->log.is_open())
        rt->pipeline->set_sample_hook(uint64_t{rt->config.sample_ms} * 1000000,
                                      write_process_sample);
    hot_line.pipeline = rt->pipeline;
    hot_line.runtime = rt;

    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    atexit(at_exit);
    diagnostics().debug("initialized: events '{}', queue capacity {}, sample interval {} ms (0: none)",
                        rt->config.events_path, rt->config.queue_capacity,
                        rt->config.sample_ms);
    hot_line.runtime_state.store(runtime_enabled, std::memory_order_release);
}

} // namespace

bool hook_enabled_after_first_call()
{
    int s = hot_line.runtime_state.load(std::memory_order_acquire);
    if (s == runtime_enabled)
        return true;
    if (s == runtime_disabled)
        return false;
    std::lock_guard<std::mutex> lock(init_lock);
    s = hot_line.runtime_state.load(std::memory_order_acquire);
    if (s == runtime_uninitialized) {
        // A wrapper reached from inside initialization (it makes no CUDA
        // call, but be safe) sees "initializing" and only forwards.
        hot_line.runtime_state.store(runtime_initializing, std::memory_order_relaxed);
        initialize();
        s = hot_line.runtime_state.load(std::memory_order_acquire);
    }
    return s == runtime_enabled;
}

void shutdown_runtime()
{
    at_exit();
}

} // namespace gdrhook

// The cache include/gdrhook.h serves (cache/core/public_api.h).
extern "C" gdrhook::RegistrationCache *gdrhook_public_cache()
{
    return gdrhook::shim_cache();
}
