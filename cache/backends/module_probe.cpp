// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/backends/module_probe.h"

#include "cache/base/safe_file.h"
#include "kmod/include/uapi/gdrhook_ioctl.h"

#include <cerrno>
#include <sys/ioctl.h>

namespace gdrhook {

ModuleProbe probe_module(const std::string &path)
{
    ModuleProbe probe;
    ModuleFacts &facts = probe.facts;
    // O_NONBLOCK only changes read(): the kmod backend drains revocation
    // records without waiting. ioctls are unaffected. A character device
    // owned by root, never a file planted at its name.
    OpenedFile opened = open_device(path.c_str());
    if (!opened) {
        facts.open_errno = opened.system_error() ? opened.system_error() : EINVAL;
        if (!opened.system_error())
            facts.refused = opened.why();
        return probe;
    }
    facts.open_errno = 0;
    probe.device = std::move(opened->fd);
    gdrhook_ioc_version version{};
    int rc;
    do
        rc = ::ioctl(probe.device.get(), GDRHOOK_IOCTL_GET_VERSION, &version);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        facts.version_errno = errno;
        return probe;
    }
    facts.answers_version = true;
    facts.abi_major = version.abi_major;
    facts.abi_minor = version.abi_minor;
    facts.abi_fits = version.abi_major == GDRHOOK_ABI_MAJOR;
    facts.features = version.features;
    facts.nvp2p = version.features & GDRHOOK_FEATURE_NVP2P;
    facts.host_pages = version.features & GDRHOOK_FEATURE_HOST_PAGES;
    facts.unpin_batch_max = version.unpin_batch_max;
    facts.max_handles = version.max_handles;
    facts.max_pinned_bytes = version.max_pinned_bytes;
    return probe;
}

} // namespace gdrhook
