// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/backend_kmod.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/ioctl.h>
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

Status from_errno(int error, const char *what)
{
    switch (error) {
    case ENOSPC:
    case ENOMEM:
        return Status::error(StatusCode::no_space, error, what);
    case EINVAL:
    case EFAULT:
        return Status::error(StatusCode::invalid, error, what);
    case EOPNOTSUPP:
        return Status::error(StatusCode::unsupported, error, what);
    default:
        return Status::error(StatusCode::io_error, error, what);
    }
}

} // namespace

Status KmodBackend::open(const std::string &path)
{
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int error = errno;
        if (error == ENOENT || error == ENXIO || error == ENODEV)
            return Status::error(StatusCode::no_device, error,
                                 "/dev/gdrhook is absent (gdrhook.ko not loaded)");
        return Status::error(StatusCode::io_error, error, "cannot open /dev/gdrhook");
    }
    UniqueFd device(fd);
    gdrhook_ioc_version version{};
    if (int error = checked_ioctl(device.get(), GDRHOOK_IOCTL_GET_VERSION, &version))
        return Status::error(StatusCode::no_device, error,
                             "/dev/gdrhook does not answer GET_VERSION");
    if (version.abi_major != GDRHOOK_ABI_MAJOR)
        return Status::error(StatusCode::unsupported, static_cast<int>(version.abi_major),
                             "gdrhook.ko speaks another ABI major version");
    if (!(version.features & GDRHOOK_FEATURE_NVP2P))
        return Status::error(StatusCode::no_device, 0,
                             "gdrhook.ko found no nvidia_p2p_* provider");
    batch_max_ = version.unpin_batch_max ? version.unpin_batch_max : 1;
    device_ = std::move(device);
    return Status::success();
}

Status KmodBackend::pin(uint64_t addr, uint64_t length, Pin &out)
{
    if (!device_.valid())
        return Status::error(StatusCode::no_device, 0, "/dev/gdrhook is not open");
    gdrhook_ioc_pin request{};
    request.backend = GDRHOOK_BACKEND_NVP2P;
    request.addr = addr;
    request.length = length;
    request.dmabuf_fd = -1;
    request.user_tag = addr;
    if (int error = checked_ioctl(device_.get(), GDRHOOK_IOCTL_PIN, &request))
        return from_errno(error, "GDRHOOK_IOCTL_PIN failed");
    out.handle = request.handle;
    return Status::success();
}

Status KmodBackend::unpin(Pin *pins, size_t count)
{
    Status first;
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

#else // no uapi header yet: the device is reported absent

Status KmodBackend::open(const std::string &)
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

#endif

} // namespace gdrhook
