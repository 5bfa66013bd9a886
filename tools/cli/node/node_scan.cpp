// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook node`: reading what is pinned from /proc and /sys.
//
// Two kinds of open file hold pinned memory. A /dev/gdrhook file holds
// the module's pins; its fdinfo (kmod/pin_table.c, gdrhook_file_show, the
// keys GDRHOOK_FDINFO_* of the uapi header) names the file, its opener
// and what it holds. A dma-buf holds its
// exporter's memory for as long as any fd of it is open (the shim's
// dma-buf backend pins by keeping one); its fdinfo gives the size and the
// exporter, and only the CUDA driver's count: a desktop's DRM buffers or
// an RDMA device's are no pin of gdrhook's. Both are found through
// /proc/PID/fdinfo, which the kernel
// lets the process's owner and root read: others' processes are counted
// as unreadable, and the module's own counters, readable by everyone,
// show how much of its pinned memory nobody visible accounts for.
//
// An fdinfo is not all the kernel's to write: a dma-buf's ends with the
// name any holder may set (DMA_BUF_SET_NAME, newlines allowed). So a
// file is the module's only when it is the module's character device
// (its device number, from /sys), and of the lines of an fdinfo only the
// first with a key counts (the kernel's own come before the name).
#include "node/node_scan.h"

#include "cache/base/safe_file.h"
#include "kmod/include/uapi/gdrhook_ioctl.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <map>
#include <set>
#include <sstream>

namespace gdrhook::cli {
namespace {

// "key:\tvalue" lines of an fdinfo or status file.
std::map<std::string, std::string> read_fields(const std::string &path, bool &readable)
{
    std::map<std::string, std::string> fields;
    const Result<std::string> text = read_small_file(path.c_str());
    readable = text.ok();
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
        const size_t colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        size_t value = colon + 1;
        while (value < line.size() && std::isspace(static_cast<unsigned char>(line[value])))
            value++;
        fields.emplace(line.substr(0, colon), line.substr(value)); // the first stays
    }
    return fields;
}

uint64_t number(const std::map<std::string, std::string> &fields, const std::string &key)
{
    auto found = fields.find(key);
    if (found == fields.end())
        return 0;
    try {
        return std::stoull(found->second);
    } catch (const std::exception &) {
        return 0;
    }
}

// The names in DIR that are numbers (pids, fds); false when DIR cannot be
// listed.
bool numeric_entries(const std::string &dir, std::vector<std::string> &names)
{
    std::vector<std::string> all;
    if (!list_directory(dir, all))
        return false;
    for (const std::string &name : all)
        if (name.find_first_not_of("0123456789") == std::string::npos)
            names.push_back(name);
    return true;
}

uint64_t read_counter(const std::string &path, bool &found)
{
    const Result<std::string> text = read_small_file(path.c_str(), 64);
    uint64_t value = 0;
    found = text && static_cast<bool>(std::istringstream(*text) >> value);
    return value;
}

// The module's counters; loaded when the three live ones can be read (the
// others are 0 where a module lacks them).
ModuleCounters read_counters(const std::string &sys_root, ModuleCounters module)
{
    const std::string dir = sys_root + "/class/misc/gdrhook/stats/";
    bool pins = false, bytes = false, files = false, found = false;
    module.pins_live = read_counter(dir + "pins_live", pins);
    module.pinned_bytes = read_counter(dir + "pinned_bytes", bytes);
    module.files_open = read_counter(dir + "files_open", files);
    module.loaded = pins && bytes && files;
    module.files_live = read_counter(dir + "files_live", found);
    module.pins_total = read_counter(dir + "pins_total", found);
    module.callbacks = read_counter(dir + "callbacks", found);
    module.late_callbacks = read_counter(dir + "late_callbacks", found);
    module.revocations = read_counter(dir + "revocations", found);
    module.events_dropped = read_counter(dir + "events_dropped", found);
    return module;
}

// The module's device number: which fds are its files.
ModuleCounters read_device(const std::string &sys_root)
{
    ModuleCounters module;
    unsigned major = 0, minor = 0;
    char colon = 0;
    const std::string dev_path = sys_root + "/class/misc/gdrhook/dev";
    const Result<std::string> dev = read_small_file(dev_path.c_str(), 64);
    module.has_device = dev &&
                        static_cast<bool>(std::istringstream(*dev) >> major >> colon >> minor) &&
                        colon == ':';
    module.device = makedev(major, minor);
    return module;
}

// Whether PATH (a /proc/PID/fd link) is an open /dev/gdrhook.
bool is_module_file(const std::string &path, const ModuleCounters &module)
{
    struct stat st {};
    return module.has_device && ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) &&
           st.st_rdev == module.device;
}

// What one process of a scan is, read before its fds.
struct Process {
    int pid = 0;
    std::string dir;
    PinHolding holder; // pid, uid, comm, job; no fd
};

// The fds left to read in a scan (ScanOptions::fd_budget).
struct FdBudget {
    uint64_t left = 0;
};

// PROCESS's fds that hold pins, into OUT; false when they cannot all be
// read: not the caller's to read, or past the budget (the process then
// in UNREADABLE, with its job, which everyone may read).
bool scan_fds(const Process &process, const ModuleCounters &module, FdBudget &budget,
              std::vector<PinHolding> &out, std::vector<PinHolding> &unreadable)
{
    const std::string &dir = process.dir;
    DIR *listing = opendir((dir + "/fdinfo").c_str());
    if (!listing) {
        if (errno == ENOENT)
            return true; // it ended since we listed it
        unreadable.push_back(process.holder);
        return false;
    }
    bool past_budget = false;
    while (const dirent *entry = readdir(listing)) {
        const std::string fd = entry->d_name;
        if (fd.find_first_not_of("0123456789") != std::string::npos || fd.empty())
            continue;
        if (budget.left == 0) {
            past_budget = true;
            break;
        }
        budget.left--;
        bool readable = false;
        auto info = read_fields(dir + "/fdinfo/" + fd, readable);
        if (!readable)
            continue; // closed since the listing
        PinHolding h = process.holder;
        h.fd = std::stoi(fd);
        if (is_module_file(dir + "/fd/" + fd, module)) {
            h.kind = PinHolding::Kind::gdrhook_file;
            h.key = std::string("gdrhook:") + info[GDRHOOK_FDINFO_FILE];
            h.pins = number(info, GDRHOOK_FDINFO_PINS);
            h.bytes = number(info, GDRHOOK_FDINFO_PINNED_BYTES);
            h.opener_pid = static_cast<int>(number(info, GDRHOOK_FDINFO_OPENER_PID));
            h.opener_uid = static_cast<unsigned>(number(info, GDRHOOK_FDINFO_OPENER_UID));
            h.orphaned = number(info, GDRHOOK_FDINFO_ORPHANED) != 0;
        } else if (info.count("exp_name") && is_cuda_dmabuf(info["exp_name"])) {
            h.kind = PinHolding::Kind::dmabuf;
            h.key = info.count("ino") ? "dmabuf:" + info["ino"]
                                      : "dmabuf:" + std::to_string(process.pid) + ":" + fd;
            h.pins = 1;
            h.bytes = number(info, "size");
            h.exporter = info["exp_name"];
            h.opener_uid = h.uid;
        } else {
            continue;
        }
        out.push_back(h);
    }
    closedir(listing);
    if (past_budget) {
        unreadable.push_back(process.holder);
        unreadable.back().past_budget = true;
    }
    return !past_budget;
}

// The processes of PROC_ROOT, each met by JOBS (its cgroup read): every
// one before any is asked its job, which may need another's cgroup.
std::vector<Process> list_processes(const std::string &proc_root, ProcessJobs &jobs)
{
    std::vector<std::string> pids;
    numeric_entries(proc_root, pids);
    // In pid order, not the directory's: which processes a budget reaches
    // is then the same on every read of the same /proc.
    std::sort(pids.begin(), pids.end(), [](const std::string &a, const std::string &b) {
        return a.size() != b.size() ? a.size() < b.size() : a < b;
    });
    std::vector<Process> processes;
    for (const std::string &pid : pids) {
        Process p;
        p.pid = std::stoi(pid);
        p.dir = proc_root + "/" + pid;
        bool readable = false;
        auto status = read_fields(p.dir + "/status", readable);
        p.holder.pid = p.pid;
        if (readable) {
            std::istringstream(status["Uid"]) >> p.holder.uid;
            // A process that ended since keeps an empty name.
            const std::string comm = read_small_file((p.dir + "/comm").c_str(), 64).value();
            std::getline(std::istringstream(comm), p.holder.comm); // a name may hold spaces
            jobs.meet(p.pid, p.holder.uid);
        }
        p.holder.pid = readable ? p.pid : 0; // 0: gone while we looked
        processes.push_back(p);
    }
    return processes;
}

// A module file's pins are charged to the job of the process that opened
// it while that process lives (a helper of another job may hold the file
// too); once it is gone, to the job of whoever holds the file.
void charge_jobs(std::vector<PinHolding> &holdings, ProcessJobs &jobs)
{
    for (PinHolding &h : holdings) {
        h.holder_job = jobs.job_of(h.pid);
        h.job = h.holder_job.job;
        if (h.kind == PinHolding::Kind::gdrhook_file && !h.orphaned && h.opener_pid > 0 &&
            jobs.met(h.opener_pid)) {
            h.opener_job = jobs.job_of(h.opener_pid);
            h.job = h.opener_job->job;
        }
    }
}

} // namespace

bool is_cuda_dmabuf(const std::string &exp_name)
{
    // "nv_dmabuf": what the exporter of CUDA's dma-bufs calls itself on an
    // H200 with a current driver (cuMemGetHandleForAddressRange, fdinfo
    // read there); "nvidia": what older drivers' exports are called (the
    // module's name, the kernel's default for an exporter's name).
    return exp_name == "nv_dmabuf" || exp_name == "nvidia";
}

bool list_directory(const std::string &dir, std::vector<std::string> &names)
{
    DIR *d = opendir(dir.c_str());
    if (!d)
        return false;
    while (const dirent *entry = readdir(d)) {
        const std::string name = entry->d_name;
        if (name != "." && name != "..")
            names.push_back(name);
    }
    closedir(d);
    return true;
}

NodeSnapshot scan_node(const std::string &proc_root, const std::string &sys_root,
                       const ScanOptions &options)
{
    NodeSnapshot snapshot;
    const ModuleCounters device = read_device(sys_root);
    const ModuleCounters before = read_counters(sys_root, device);
    ProcessJobs jobs(proc_root);
    if (!options.job.empty() && options.job_user)
        jobs.name_user(options.job, *options.job_user);
    std::vector<Process> processes = list_processes(proc_root, jobs);
    // The job asked about first: the budget is spent on its processes
    // before any other's.
    std::stable_partition(processes.begin(), processes.end(), [&](const Process &p) {
        return p.holder.pid != 0 && in_job(jobs.job_of(p.pid), options.job, "");
    });
    FdBudget budget{options.fd_budget};
    for (const Process &p : processes) {
        if (p.holder.pid == 0)
            continue; // gone while we looked: nothing to count
        snapshot.processes++;
        if (!scan_fds(p, device, budget, snapshot.holdings, snapshot.unreadable_processes)) {
            snapshot.unreadable++;
            PinHolding &unread = snapshot.unreadable_processes.back();
            unread.holder_job = jobs.job_of(unread.pid);
            unread.job = unread.holder_job.job;
            snapshot.past_budget += unread.past_budget;
        }
    }
    charge_jobs(snapshot.holdings, jobs);
    snapshot.job_users = jobs.users();
    snapshot.module = read_counters(sys_root, device);
    snapshot.steady_pins = std::min(before.pins_live, snapshot.module.pins_live);
    snapshot.steady_bytes = std::min(before.pinned_bytes, snapshot.module.pinned_bytes);
    return snapshot;
}

namespace {

// Adds what H holds to ROW unless a holding with the same KEY was added.
void add_once(std::set<std::string> &counted, const std::string &key, const PinHolding &h,
              NodeTotals::Row &row)
{
    if (!counted.insert(key).second)
        return;
    row.pins += h.pins;
    row.bytes += h.bytes;
    if (h.orphaned)
        row.orphaned_pins += h.pins;
}

} // namespace

NodeTotals total_node(const NodeSnapshot &snapshot)
{
    NodeTotals totals;
    std::set<std::string> counted;
    for (const PinHolding &h : snapshot.holdings)
        add_once(counted, h.key, h,
                 h.kind == PinHolding::Kind::gdrhook_file ? totals.gdrhook : totals.dmabuf);
    if (snapshot.module.loaded) {
        if (snapshot.steady_pins > totals.gdrhook.pins)
            totals.unattributed_pins = snapshot.steady_pins - totals.gdrhook.pins;
        if (snapshot.steady_bytes > totals.gdrhook.bytes)
            totals.unattributed_bytes = snapshot.steady_bytes - totals.gdrhook.bytes;
    }
    return totals;
}

std::map<OwnerKey, NodeTotals::Row> total_by_owner(const NodeSnapshot &snapshot)
{
    std::map<OwnerKey, NodeTotals::Row> rows;
    std::set<std::string> counted;
    for (const PinHolding &h : snapshot.holdings)
        add_once(counted, std::to_string(h.opener_uid) + "/" + h.job + "/" + h.key, h,
                 rows[{h.opener_uid, h.job, h.kind}]);
    return rows;
}

namespace {

// The snapshot with only the holdings KEEP accepts.
template <typename Keep> NodeSnapshot only(const NodeSnapshot &snapshot, Keep keep)
{
    NodeSnapshot some = snapshot;
    some.holdings.clear();
    for (const PinHolding &h : snapshot.holdings)
        if (keep(h))
            some.holdings.push_back(h);
    return some;
}

} // namespace

NodeSnapshot only_user(const NodeSnapshot &snapshot, unsigned uid)
{
    return only(snapshot, [uid](const PinHolding &h) { return h.opener_uid == uid; });
}

JobPins pins_of_job(const NodeSnapshot &snapshot, const std::string &job, const std::string &step)
{
    JobPins result;
    const auto named = snapshot.job_users.find(job);
    const std::optional<unsigned> user =
        named == snapshot.job_users.end() ? std::nullopt : std::optional(named->second);
    result.unattributed_pins = total_node(snapshot).unattributed_pins;
    for (const PinHolding &p : snapshot.unreadable_processes)
        if (may_be_of_job(p.holder_job, p.uid, job, step, user)) {
            result.unreadable++;
            result.past_budget += p.past_budget;
        }
    std::set<std::string> counted; // a file held by several processes: once
    for (const PinHolding &h : snapshot.holdings) {
        const bool first = counted.insert(h.key).second;
        // The holder's job, or, for a module file another process holds
        // now, its opener's while that one lives.
        if (in_job(h.holder_job, job, step) || (h.opener_job && in_job(*h.opener_job, job, step)))
            result.job.push_back(h);
        else if (first && !h.holder_job.job.empty())
            result.other_jobs_pins += h.pins;
        else if (first)
            result.no_job_pins += h.pins;
    }
    return result;
}

} // namespace gdrhook::cli
