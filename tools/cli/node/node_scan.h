// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once
// What is pinned on this machine now, as /proc and /sys show it to the
// caller: `gdrhook node` (README, "What is pinned on a node").

#include "job/job_of_process.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <sys/types.h>
#include <tuple>
#include <vector>

namespace gdrhook::cli {

// One open file that holds pinned memory, seen in one process's
// /proc/PID/fdinfo/FD. A file held by several processes (a forked child
// keeps its parent's fds) appears once per holder, with the same key.
struct PinHolding {
    enum class Kind { gdrhook_file, dmabuf };
    Kind kind = Kind::gdrhook_file;
    int pid = 0;      // the holder
    unsigned uid = 0; // the holder's real uid
    std::string comm; // the holder's command name
    int fd = 0;
    // The same key is the same file (gdrhook: the module's file id;
    // dma-buf: its inode, or "pid:fd" where the kernel shows no inode).
    std::string key;
    uint64_t pins = 0; // gdrhook: handles the file holds; dma-buf: 1
    uint64_t bytes = 0;
    // gdrhook: the opener and the user charged for the pins, and whether
    // the opener's address space has ended (killed, exited, exec'd) so that
    // only this holder keeps the pins alive.
    int opener_pid = 0;
    unsigned opener_uid = 0;
    bool orphaned = false;
    std::string exporter; // dma-buf: exp_name
    // The Slurm job the holder runs for (job/job_of_process.h); and, for a
    // module file whose opener still lives, the opener's.
    JobOfProcess holder_job;
    std::optional<JobOfProcess> opener_job;
    // The job its pins are charged to in the node's figures, each file
    // under one job: its opener's while that lives, else its holder's.
    std::string job;
    // Unread: its fds were not all read for the fd budget (ScanOptions).
    bool past_budget = false;
};

// Whether a dma-buf of exporter EXP_NAME is one gdrhook pins by holding:
// the CUDA driver's exports. Other dma-bufs (DRM PRIME buffers, an RDMA
// device's, a heap's) are no pin of gdrhook's and never count.
bool is_cuda_dmabuf(const std::string &exp_name);

// The module's node-wide counters (/sys/class/misc/gdrhook/stats/,
// kmod/stats.c).
struct ModuleCounters {
    bool loaded = false;
    uint64_t pins_live = 0;
    uint64_t pinned_bytes = 0;
    uint64_t files_open = 0;
    uint64_t files_live = 0;
    // Cumulative since the module was loaded.
    uint64_t pins_total = 0;
    uint64_t callbacks = 0;
    uint64_t late_callbacks = 0;
    uint64_t revocations = 0;
    uint64_t events_dropped = 0;
    // /dev/gdrhook's device number (SYS_ROOT/class/misc/gdrhook/dev): an
    // fd is the module's file only when it is that character device.
    bool has_device = false;
    dev_t device = 0;
};

struct NodeSnapshot {
    std::vector<PinHolding> holdings;
    ModuleCounters module; // read once /proc was read
    // The module's live pins and bytes that lasted the whole scan: the
    // lower of the counters read before /proc and after it. A pin that
    // went, or came, while /proc was read is in only one of the two reads,
    // so it is not taken for a pin no file accounts for.
    uint64_t steady_pins = 0;
    uint64_t steady_bytes = 0;
    int processes = 0;   // processes looked at
    int unreadable = 0;  // ... whose fds the caller may not read, or did not
    int past_budget = 0; // ... of them, not read for the fd budget
    // Those processes (pid, uid, comm, job; no fd): whose they may be, for
    // a verdict on one job (pins_of_job).
    std::vector<PinHolding> unreadable_processes;
    // The user of each job, as named to the scan or shown by its cgroups.
    std::map<std::string, unsigned> job_users;
};

// How much of /proc a scan reads. Every fd of every process is read as
// root: a user may hold millions. Past FD_BUDGET fds read in all, a
// process's fds are not read (what was read of it stays): it counts as
// unreadable, never as holding nothing. The processes of JOB are read
// first, so that another user's fds cannot spend the budget of its verdict.
struct ScanOptions {
    static constexpr uint64_t default_fd_budget = 250000; // ~10 s
    uint64_t fd_budget = default_fd_budget;
    std::string job;
    std::optional<unsigned> job_user; // JOB's user, as Slurm names it
};

// The entries of DIR but . and ..; false when DIR cannot be listed.
bool list_directory(const std::string &dir, std::vector<std::string> &names);

// Reads PROC_ROOT/[0-9]*/{status,comm,cgroup,environ,fd/*,fdinfo/*} and
// SYS_ROOT/class/misc/gdrhook/{dev,stats/*}, the counters before /proc and
// again after it. Processes that vanish while being read are skipped;
// those whose fdinfo is not readable, or not read, are counted.
NodeSnapshot scan_node(const std::string &proc_root, const std::string &sys_root,
                       const ScanOptions &options = {});

// Node-wide figures from a snapshot, each file counted once however many
// processes hold it.
struct NodeTotals {
    struct Row {
        uint64_t pins = 0;
        uint64_t bytes = 0;
        uint64_t orphaned_pins = 0;
    };
    Row gdrhook; // through the module's files
    Row dmabuf;
    // The module's pins that no file seen here accounts for: held by
    // processes the caller may not read, or by no process at all.
    uint64_t unattributed_pins = 0;
    uint64_t unattributed_bytes = 0;
};
NodeTotals total_node(const NodeSnapshot &snapshot);

// The same per user and job: gdrhook files under the user who opened them
// (who is charged for their pins), dma-bufs under the users holding them;
// each under the job of its holder.
struct OwnerKey {
    unsigned uid = 0;
    std::string job;
    PinHolding::Kind kind = PinHolding::Kind::gdrhook_file;
    bool operator<(const OwnerKey &other) const
    {
        return std::tie(uid, job, kind) < std::tie(other.uid, other.job, other.kind);
    }
};
std::map<OwnerKey, NodeTotals::Row> total_by_owner(const NodeSnapshot &snapshot);

// Only the holdings of user UID: gdrhook files charged to UID (their
// opener), dma-bufs held by UID's processes.
NodeSnapshot only_user(const NodeSnapshot &snapshot, unsigned uid);

// What of a node snapshot is job JOB's (of step STEP; "": every step),
// for `gdrhook epilog` and `gdrhook node --job` alike: holdings of its
// processes, and module files its live processes opened that others hold.
struct JobPins {
    std::vector<PinHolding> job;    // charged to the job
    uint64_t other_jobs_pins = 0;   // held by other jobs' processes
    uint64_t no_job_pins = 0;       // held by processes of no job
    uint64_t unattributed_pins = 0; // module pins no readable process holds
    // Processes whose fds were not read (unreadable, or past the fd
    // budget) and that may be the job's (may_be_of_job).
    int unreadable = 0;
    int past_budget = 0; // ... of them, not read for the budget
};
JobPins pins_of_job(const NodeSnapshot &snapshot, const std::string &job,
                    const std::string &step = "");

} // namespace gdrhook::cli
