// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The one place that builds the shim's objects: the configuration, the
// event log, the allocation tracker, the event pipeline, when pinning is
// on the unpinner the worker runs, and, through one table
// (subscriber_order.h), who hears of frees and allocations; it hands each
// the references it uses and fills the hot line (cache/prim/hot_line.h)
// for the hot path.
#include "cache/core/runtime.h"

#include "cache/pointers/pointer_answers.h"

#include "cache/backends/descriptor_budget.h"
#include "cache/base/clock.h"
#include "cache/base/descriptor_room.h"
#include "cache/base/diagnostics.h"
#include "cache/base/private_files.h"
#include "cache/base/unknown_variables.h"
#include "cache/core/process_cache.h"
#include "cache/core/process_sample.h"
#include "cache/core/start_folder.h"
#include "cache/core/subscriber_order.h"
#include "cache/events/event_clock.h"
#include "cache/events/process_line.h"
#include "cache/events/thread_state.h"
#include "cache/notify/free_subscribers.h"
#include "cache/pinning/unpinner.h"
#include "cache/pointers/pointer_answers.h"
#include "cache/prim/cycle_counter.h"
#include "cache/prim/hot_arena.h"
#include "cache/prim/profile.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <pthread.h>
#include <unistd.h>
#include <utility>

namespace gdrhook {
namespace {

std::mutex init_lock;
Runtime *the_runtime = nullptr; // never freed (see runtime.h)

// The counter's rate, for the profile's report: the event clock's where
// events carry it, else measured now over 10 ms.
uint64_t cycle_counter_ticks_per_ms()
{
    if (const uint64_t hz = event_clock_tsc_hz())
        return hz / 1000;
    const uint64_t ns0 = monotonic_ns(), ticks0 = read_cycle_counter();
    usleep(10000);
    const uint64_t ns = monotonic_ns() - ns0, ticks = read_cycle_counter() - ticks0;
    return ns ? ticks * 1000000 / ns : 0;
}

void print_statistics()
{
    Runtime &rt = *the_runtime;
    PipelineStats s = rt.pipeline->stats();
    diagnostics().info("events: {} queued, {} handled by their producer (queue "
                       "full or worker stopped), {} written; {} allocations "
                       "still tracked",
                       s.pushed, s.overflowed, s.written, rt.tracker.size());
    const PointerQueryCounts q = pointer_query_counts();
    diagnostics().info("pointer queries: {} answered, {} forwarded; verify: {} checked, {} "
                       "differed",
                       q.answered, q.forwarded, q.verified, q.differences);
    if (q.differences)
        diagnostics().error("verify mode caught {} pointer answers that differ from the "
                            "driver's",
                            q.differences);
}

// Everything recorded is in the log: nothing is left to recover, and the
// journal goes. Where the log could not take it all (a full file system),
// the journal stays with what the log lacks, and the loss is said once.
void keep_journal_or_remove()
{
    Runtime &rt = *the_runtime;
    // After the pipeline's shutdown: nobody writes the log any more. The
    // worker's own lines the sink dropped count as lost too.
    uint64_t lost = rt.pipeline->stats().lost + rt.log.dropped_lines();
    if (rt.log.all_written() && !lost) {
        rt.journal.remove();
        return;
    }
    const int error = rt.log.write_errno();
    const std::string kept = rt.journal.keep_for_recovery(lost);
    // No journal keeps the lines the log lacks: they are lost too, and the
    // log says how many in its last line (`gdrhook log check` fails on it).
    if (kept.empty())
        lost = rt.log.end_with_loss_line(lost, rt.pid, rt.pipeline->last_seq());
    diagnostics().error("the event log '{}' could not be written ({}): {} event(s) lost; {}",
                        rt.log.path(), strerror(error), lost,
                        kept.empty() ? std::string("there is no journal to recover the others from")
                                     : "the others wait in '" + kept +
                                           "' for `gdrhook log recover " + rt.log.path() + "`");
}

// The cap (GDRHOOK_LOG_MAX_BYTES) kept events out of the log: its last line
// says how many, and so does stderr, so that no event goes unaccounted.
void end_capped_log()
{
    Runtime &rt = *the_runtime;
    const uint64_t not_written = rt.log.not_written();
    if (!not_written)
        return;
    rt.log.end_with_capped_line(rt.pid, rt.pipeline->last_seq());
    diagnostics().warn("the event log '{}' reached GDRHOOK_LOG_MAX_BYTES ({} bytes): {} event(s) "
                       "not written",
                       rt.log.path(), rt.config.log_max_bytes, not_written);
}

// The process's pointer queries, one `queries` line as it ends, if it
// made any: how many the table answered and how many went to the driver.
void log_pointer_queries()
{
    const PointerQueryCounts counts = pointer_query_counts();
    if (!counts.answered && !counts.forwarded)
        return;
    static QueryCounts logged; // the line points at it until it is written
    logged.answered = counts.answered;
    logged.forwarded = counts.forwarded;
    Event event = make_event(EventKind::queries, "gdrhook", Via::symbol, MemoryKind::none, 0, 0);
    event.queries = &logged;
    the_runtime->pipeline->submit(event);
}

// `others_wait`: nothing of the program's runs after us on this thread or
// any other (finish_before_process_ends()).
void finish_recording(bool others_wait)
{
    if (!runtime_running())
        return;
    // Nothing stays pinned past the process: every registration is
    // unpinned, and logged, by the last drain of the queue.
    retire_process_cache_at_exit();
    log_pointer_queries();
    if (others_wait)
        the_runtime->pipeline->close_for_process_end();
    the_runtime->pipeline->shutdown();
    end_capped_log();
    keep_journal_or_remove();
    print_statistics();
    print_process_cache_statistics();
    if (profiling())
        for (const std::string &part : profile_report(cycle_counter_ticks_per_ms()))
            diagnostics().warn("{}", part);
}

void at_exit()
{
    // Exit handlers and destructors after ours may free memory, on this
    // thread or while joining others: nobody is held back.
    finish_recording(false);
}

void before_fork()
{
    if (runtime_running()) {
        // The pipeline's locks first: its worker takes the reclaimer's
        // lock under them to report unpins.
        the_runtime->pipeline->before_fork();
        process_cache_before_fork();
    }
    // Last: a pin takes it under the cache's locks.
    descriptor_room_before_fork();
}

void after_fork_in_parent()
{
    descriptor_room_after_fork_in_parent();
    if (!runtime_running())
        return;
    process_cache_after_fork_in_parent();
    the_runtime->pipeline->after_fork_in_parent();
}

void after_fork_in_child()
{
    private_files_after_fork_in_child();
    descriptor_room_after_fork_in_child();
    forget_cached_thread_ids();
    if (!runtime_running())
        return;
    Runtime &rt = *the_runtime;
    rt.pid = static_cast<int>(getpid());
    rt.forked_child = true;
    rt.written_at_fork = rt.pipeline->stats().written;
    rt.tracker.reinitialize_locks_after_fork();
    rt.graph_memory.reinitialize_lock_after_fork();
    process_cache_after_fork_in_child();
    pointer_answers_after_fork_in_child();
    // A pattern with %p names a file of the child's own; without, the
    // child appends to its parent's, after a process line of its own.
    // The pattern was checked at start: it expands here too.
    const Result<std::string> expanded =
        rt.config.events_pattern.empty()
            ? Result<std::string>(std::string())
            : expand_path_pattern(rt.config.events_pattern,
                                  PathNames{rt.pid, rt.config.host, rt.config.rank});
    const bool own_log = !rt.config.events_pattern.empty() && expanded.ok();
    const std::string path = absolute_from_start(*expanded);
    rt.log.after_fork_in_child();
    // Before the queue is reset: its cells are still the parent's journal.
    rt.journal.move_to_child(own_log ? path : rt.log.path(), rt.pid);
    rt.pipeline->after_fork_in_child(rt.pid);
    if (own_log) {
        if (const Result<void> opened = rt.log.open(path); !opened)
            diagnostics().error("{}", opened.why());
    } else {
        rt.log.count_anew(); // the cap is the child's own, in its parent's file
    }
    if (rt.unpinner)
        rt.unpinner->note_fork_in_child();
}

// The log's first line (process_line.h), made when the log file is: the
// driver has been initialized by then (an allocation or a free happened).
std::string describe_process(const Runtime &rt, int pid)
{
    ProcessDescription p;
    p.host = rt.config.host;
    p.rank = rt.config.rank;
    p.rank_from = rt.config.rank_from;
    p.ppid = static_cast<int>(getppid());
    read_command_line(p);
    p.version = GDRHOOK_VERSION;
    p.config = config_values(rt.config);
    const DriverQueries &q = rt.queries;
    if (q.driver_version && (p.driver_version = q.driver_version()) >= 0 && q.device_count) {
        const int count = q.device_count();
        for (int ordinal = 0; ordinal < count && q.device_identity; ++ordinal) {
            char name[256] = {}, uuid[64] = {}, pci[32] = {};
            if (q.device_identity(ordinal, name, sizeof name, uuid, sizeof uuid, pci, sizeof pci))
                p.devices.push_back(DeviceDescription{ordinal, name, uuid, pci});
        }
    }
    p.tsc = hot_line.event_clock_counts_tsc;
    p.realtime_ns = realtime_ns();
    p.monotonic_ns = monotonic_ns();
    if (p.tsc) {
        p.tsc_value = read_cycle_counter();
        p.tsc_hz = event_clock_tsc_hz();
    }
    return format_process_line(p, pid, current_tid());
}

void initialize(const DriverQueries &queries)
{
    const int pid = static_cast<int>(getpid());
    Diagnostics problems;
    Config config = parse_config([](const char *name) { return getenv(name); }, pid, problems);
    // Never freed (see runtime.h). With the other hot objects (hot_arena.h),
    // unless the shim only forwards: pass-through maps no 2 MiB region.
    void *memory = config.disabled
                       ? ::operator new (sizeof(Runtime), std::align_val_t{alignof(Runtime)})
                       : hot_arena_allocate(sizeof(Runtime), alignof(Runtime));
    auto *rt = new (memory) Runtime();
    rt->pid = pid;
    rt->descriptor_limit = soft_descriptor_limit();
    rt->config = std::move(config);
    rt->queries = queries;
    // Said before the configured level applies: a bad setting is always
    // said, GDRHOOK_LOG_LEVEL=off or not (a bad level among them).
    for (const std::string &line : problems)
        diagnostics().error("{}", line);
    set_diagnostics_level(rt->config.log_level);
    // A GDRHOOK_* variable nothing reads: likely a misspelled setting, left
    // at its default. A warning, so under the level just set; once, here,
    // as the process starts (initialize runs once per process).
    Diagnostics unknown;
    check_variable_names(environ, unknown);
    for (const std::string &line : unknown)
        diagnostics().warn("{}", line);

    the_runtime = rt;
    if (rt->config.disabled) {
        hot_line.runtime_state.store(runtime_disabled, std::memory_order_release);
        return;
    }

    start_event_clock();
    hot_line.profiling = rt->config.profile;
    // Resolved once, now: the program may change folder at any time
    // (start_folder.h); its log, journal and children's logs stay where
    // it started.
    rt->config.events_path = absolute_from_start(rt->config.events_path);
    if (const Result<void> opened = rt->log.open(rt->config.events_path); !opened)
        diagnostics().error("{}; events are not logged", opened.why());
    rt->log.set_first_line([rt](int pid) { return describe_process(*rt, pid); });
    rt->log.set_max_bytes(rt->config.log_max_bytes);
    // Where events are written down, the queue lives in the journal beside
    // the log, so that they outlive the process however it ends.
    if (rt->log.is_open()) {
        const Result<void> created = rt->journal.create(rt->log.path(), rt->config.queue_capacity,
                                                        EventPipeline::queue_cell_bytes, rt->pid);
        if (!created) {
            diagnostics().warn("{}; events recorded just before the process is killed may be lost",
                               created.why());
            rt->log.keep_room_for_loss_line();
        }
    }
    rt->pipeline = new (hot_arena_allocate(sizeof(EventPipeline), alignof(EventPipeline)))
        EventPipeline(rt->config.queue_capacity, rt->log, rt->pid, rt->journal.cells());
    if (rt->config.pin != PinPolicy::off) {
        Unpinner *unpinner = new Unpinner(*rt->pipeline, hot_line.cache);
        rt->unpinner = unpinner;
        rt->pipeline->set_handler([unpinner](Event &event) { unpinner->note_written(event); });
        // Eager unpin, once per batch.
        rt->pipeline->set_batch_hook([unpinner] { unpinner->run_batch(); });
    }
    // Samples only where they are written down.
    if (rt->config.sample_ms && rt->log.is_open())
        rt->pipeline->set_sample_hook(uint64_t{rt->config.sample_ms} * 1000000,
                                      [rt] { write_process_sample(*rt->pipeline); });

    hot_line.pipeline = rt->pipeline;
    hot_line.tracker = &rt->tracker;
    hot_line.queries = &rt->queries;
    // Who hears of a free and of an allocation, in the orders of one table
    // (subscriber_order.cpp); each listens once it has something to do.
    subscribe_in_order(*rt);

    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    atexit(at_exit);
    diagnostics().debug(
        "initialized: events '{}', queue capacity {}, sample interval {} ms (0: none)",
        rt->config.events_path, rt->config.queue_capacity, rt->config.sample_ms);
    hot_line.runtime_state.store(runtime_enabled, std::memory_order_release);
}

} // namespace

bool start_runtime(const DriverQueries &queries)
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
        initialize(queries);
        s = hot_line.runtime_state.load(std::memory_order_acquire);
    }
    return s == runtime_enabled;
}

Runtime &runtime()
{
    return *the_runtime;
}

void publish_context_query(int (*query)(void **))
{
    hot_line.context_query.store(query, std::memory_order_release);
}

void shutdown_runtime()
{
    at_exit();
}

void finish_before_process_ends(ProcessEnd how)
{
    if (!runtime_running())
        return;
    const bool replaced_by_exec = how == ProcessEnd::exec;
    Runtime &rt = *the_runtime;
    // vfork() runs no fork handler: a pid other than ours is such a child,
    // sharing the parent's memory; touching the shim there would change
    // the parent.
    if (static_cast<int>(getpid()) != rt.pid)
        return;
    // Python's subprocess and the like fork and exec at once: a child with
    // nothing of its own to say leaves no log (the exec closes its copies
    // of the parent's dma-buf fds).
    if (replaced_by_exec && rt.forked_child && rt.pipeline->stats().written == rt.written_at_fork &&
        !rt.pipeline->may_hold_events()) {
        rt.journal.remove();
        return;
    }
    finish_recording(how != ProcessEnd::after_handlers);
}

void process_goes_on_after_failed_exec()
{
    if (runtime_running() && static_cast<int>(getpid()) == the_runtime->pid)
        the_runtime->pipeline->reopen_after_failed_exec();
}

} // namespace gdrhook
