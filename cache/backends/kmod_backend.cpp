// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/backends/kmod_backend.h"

#include "cache/backends/peer_setup.h"
#include "cache/base/capture.h"
#include "cache/base/diagnostics.h"
#include "cache/base/safe_file.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <vector>

#if __has_include("kmod/include/uapi/gdrhook_ioctl.h")
#include "kmod/include/uapi/gdrhook_ioctl.h"
#define GDRHOOK_HAVE_UAPI 1
#else
#define GDRHOOK_HAVE_UAPI 0
#endif

namespace gdrhook {

const char *KmodBackend::default_path()
{
#if GDRHOOK_HAVE_UAPI
    return GDRHOOK_DEVICE_PATH;
#else
    return "/dev/gdrhook";
#endif
}

#if GDRHOOK_HAVE_UAPI

namespace {

// ioctl() restarted on EINTR; returns 0 or the errno.
int checked_ioctl(int fd, unsigned long request, void *argument)
{
    for (;;) {
        if (::ioctl(fd, request, argument) == 0)
            return 0;
        if (errno != EINTR)
            return errno;
    }
}

// Why the module refused a pin, in words a user can act on: host pages
// are charged to the opener's RLIMIT_MEMLOCK unless it holds
// CAP_IPC_LOCK, every pin to the per-user cap (kmod/README.md, "Access
// model").
const char *refusal(int error, bool nvp2p)
{
    if (error == ENOMEM && !nvp2p)
        return "GDRHOOK_IOCTL_PIN refused: host pages past the opener's RLIMIT_MEMLOCK (raise "
               "`ulimit -l`, or run with CAP_IPC_LOCK); not pinned";
    if (error == ENOSPC)
        return "GDRHOOK_IOCTL_PIN refused: the module's cap on pinned bytes for this file or "
               "user is reached; not pinned";
    return "GDRHOOK_IOCTL_PIN failed";
}

Status from_errno(int error, const char *what)
{
    switch (error) {
    case ENOSPC:
    case ENOMEM: return Status::error(StatusCode::no_space, error, what);
    case EINVAL:
    case EFAULT: return Status::error(StatusCode::invalid, error, what);
    case EOPNOTSUPP: return Status::error(StatusCode::unsupported, error, what);
    default: return Status::error(StatusCode::io_error, error, what);
    }
}

} // namespace

Status KmodBackend::open(const std::string &path)
{
    return attach(probe_module(path));
}

Status KmodBackend::attach(ModuleProbe probe)
{
    // What its row asks of the module (the GPU's facts are no part of it).
    Status status = backend_row(kind_).usable(probe.facts, GpuFacts{});
    if (!status.ok())
        return status;
    if (!probe.device.valid())
        return Status::error(StatusCode::no_device, 0, "/dev/gdrhook is not open");
    // Far above the program's own numbers, and checked before use: a
    // program that closes every descriptor must not get our ioctls.
    device_ = OwnedFd::adopt(std::move(probe.device), true);
    batch_max_ = probe.facts.unpin_batch_max ? probe.facts.unpin_batch_max : 1;
    return Status::success();
}

bool KmodBackend::device_still_ours()
{
    if (device_.still_ours())
        return true;
    // Closing /dev/gdrhook released every pin it held (the module's
    // release); the number may be the program's now: never used again
    // (nor closed, owned_fd.h).
    if (device_.valid() && !said_device_closed_.exchange(true))
        diagnostics().error(
            "the program closed gdrhook's descriptor of /dev/gdrhook: its pins were "
            "released then; nothing more is pinned");
    return false;
}

Status KmodBackend::pin(uint64_t addr, uint64_t length, Pin &out)
{
    if (!device_still_ours())
        return Status::error(StatusCode::no_device, 0, "/dev/gdrhook is not open");
    if (capture_in_progress()) // SYNC_MEMOPS would invalidate it (base/capture.h)
        return Status::error(StatusCode::unsupported, 0,
                             "a stream capture is in progress: nothing is pinned");
    // Host pages are coherent with the GPU's accesses: nothing to ask of
    // the driver for them.
    const uint32_t method = backend_row(kind_).module_pin;
    const bool nvp2p = method == GDRHOOK_BACKEND_NVP2P;
    // A pin on the shim's own initiative leaves SYNC_MEMOPS to the first
    // library that asks for it (prepare_for_peer), as the dma-buf backend.
    if (Status status = set_up_or_defer(driver_, addr, nvp2p, out); !status.ok())
        return status;
    gdrhook_ioc_pin request{};
    request.backend = method;
    request.addr = addr;
    request.length = length;
    request.dmabuf_fd = -1;
    request.user_tag = addr;
    std::shared_lock<std::shared_mutex> in_flight(pins_in_flight_);
    if (int error = checked_ioctl(device_.get(), GDRHOOK_IOCTL_PIN, &request))
        return from_errno(error, refusal(error, nvp2p));
    out.handle = request.handle;
    std::lock_guard<std::mutex> lock(held_mutex_);
    held_[request.handle] = false;
    return Status::success();
}

Status KmodBackend::prepare_for_peer(uint64_t addr)
{
    return set_up_for_peer(driver_, addr);
}

Status KmodBackend::unpin(Pin *pins, size_t count)
{
    Status first;
    if (!device_still_ours()) {
        for (size_t i = 0; i < count; ++i)
            pins[i].handle = 0; // released when the program closed the device
        return first;
    }
    std::vector<__u64> handles;
    handles.reserve(count < batch_max_ ? count : batch_max_);
    size_t i = 0;
    while (i < count) {
        handles.clear();
        for (; i < count && handles.size() < batch_max_; ++i) {
            if (pins[i].handle)
                handles.push_back(pins[i].handle);
            pins[i].handle = 0;
        }
        if (handles.empty())
            continue;
        {
            // Forgotten first: a record that names one of these from now
            // on is about a pin the cache has already let go.
            std::lock_guard<std::mutex> lock(held_mutex_);
            for (__u64 handle : handles)
                held_.erase(handle);
        }
        gdrhook_ioc_unpin_batch request{};
        request.handles = reinterpret_cast<uintptr_t>(handles.data());
        request.count = static_cast<__u32>(handles.size());
        // The module unpins every valid handle even when one fails.
        if (int error = checked_ioctl(device_.get(), GDRHOOK_IOCTL_UNPIN_BATCH, &request);
            error && first.ok())
            first = from_errno(error, "GDRHOOK_IOCTL_UNPIN_BATCH failed");
    }
    return first;
}

size_t KmodBackend::take_revocations(std::vector<uint64_t> &handles)
{
    if (!device_still_ours())
        return 0;
    std::vector<uint64_t> named;
    bool overflow = false;
    gdrhook_event records[64];
    for (;;) {
        ssize_t got = ::read(device_.get(), records, sizeof(records));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break; // EAGAIN: drained
        const size_t n = static_cast<size_t>(got) / sizeof(records[0]);
        for (size_t k = 0; k < n; ++k) {
            switch (records[k].type) {
            case GDRHOOK_EVENT_REVOKED_NVP2P:
            case GDRHOOK_EVENT_REVOKED_DMABUF:
            case GDRHOOK_EVENT_REVOKED_HOST: named.push_back(records[k].handle); break;
            case GDRHOOK_EVENT_OVERFLOW: overflow = true; break;
            default: break; // a kind added by a later minor version
            }
        }
        if (n < sizeof(records) / sizeof(records[0]))
            break; // short read: the queue was emptied
    }

    if (named.empty() && !overflow)
        return 0;
    // Wait out the pins in flight: one of them may have made a handle
    // named here (revoked as soon as it was published) and not yet
    // recorded it in held_.
    std::unique_lock<std::shared_mutex> no_pin_in_flight(pins_in_flight_);
    if (overflow) {
        // Records were lost: ask about every handle not yet reported. Pins
        // wait meanwhile; unpins do not, and a handle they take away is
        // skipped below because it is no longer held.
        std::vector<uint64_t> candidates;
        {
            std::lock_guard<std::mutex> lock(held_mutex_);
            candidates.reserve(held_.size());
            for (const auto &[handle, reported] : held_)
                if (!reported)
                    candidates.push_back(handle);
        }
        for (uint64_t handle : candidates) {
            gdrhook_ioc_query query{};
            query.handle = handle;
            if (checked_ioctl(device_.get(), GDRHOOK_IOCTL_QUERY, &query) == 0 &&
                query.state == GDRHOOK_STATE_REVOKED)
                named.push_back(handle);
        }
    }

    size_t added = 0;
    std::lock_guard<std::mutex> lock(held_mutex_);
    for (uint64_t handle : named) {
        auto it = held_.find(handle);
        if (it == held_.end() || it->second)
            continue; // unpinned already, or reported already
        it->second = true;
        handles.push_back(handle);
        ++added;
    }
    return added;
}

#else // no uapi header yet: the device is reported absent

Status KmodBackend::open(const std::string &)
{
    return Status::error(StatusCode::no_device, 0,
                         "built without gdrhook_ioctl.h: the kmod backend is unavailable");
}
Status KmodBackend::attach(ModuleProbe)
{
    return Status::error(StatusCode::no_device, 0,
                         "built without gdrhook_ioctl.h: the kmod backend is unavailable");
}
Status KmodBackend::pin(uint64_t, uint64_t, Pin &)
{
    return Status::error(StatusCode::no_device, 0, "the kmod backend is unavailable");
}
Status KmodBackend::unpin(Pin *, size_t)
{
    return Status::success();
}
size_t KmodBackend::take_revocations(std::vector<uint64_t> &)
{
    return 0;
}

#endif

} // namespace gdrhook
