// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once
// What is pinned on this machine now, as /proc and /sys show it to the
// caller: `gdrhook node` (README, "What is pinned on a node").

#include <cstdint>
#include <map>
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
    // The Slurm job the holder runs in (from its cgroup), or "".
    std::string job;
};

// Whether a dma-buf of exporter EXP_NAME is one gdrhook pins by holding:
// the CUDA driver's exports. Other dma-bufs (DRM PRIME buffers, an RDMA
// device's, a heap's) are no pin of gdrhook's and never count.
bool is_cuda_dmabuf(const std::string &exp_name);

// The Slurm job id in a /proc/PID/cgroup text (Slurm's cgroup plugins put
// a job's tasks under .../job_ID/...), or "".
std::string slurm_job_of_cgroup(const std::string &cgroup);

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
    int processes = 0;  // processes looked at
    int unreadable = 0; // ... whose fds the caller may not read
    // Those processes (pid, uid, comm; no fd): whose they are, for a
    // verdict on one job (tools/cli/epilog).
    std::vector<PinHolding> unreadable_processes;
    // The same by Slurm job ("": in none), which /proc/PID/cgroup tells
    // everyone: a job's verdict needs only its own processes read.
    std::map<std::string, int> unreadable_by_job;
};

// The entries of DIR but . and ..; false when DIR cannot be listed.
bool list_directory(const std::string &dir, std::vector<std::string> &names);

// Reads PROC_ROOT/[0-9]*/{status,comm,cgroup,fd/*,fdinfo/*} and
// SYS_ROOT/class/misc/gdrhook/{dev,stats/*}, the counters before /proc and
// again after it. Processes that vanish while being read are skipped;
// those whose fdinfo is not readable are counted.
NodeSnapshot scan_node(const std::string &proc_root, const std::string &sys_root);

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

// Only the holdings of processes in Slurm job JOB.
NodeSnapshot only_job(const NodeSnapshot &snapshot, const std::string &job);

} // namespace gdrhook::cli
