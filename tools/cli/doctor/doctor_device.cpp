// SPDX-License-Identifier: MIT OR GPL-2.0-only
// The doctor's question to the kernel module: is /dev/gdrhook there, can
// this user open it, and does its ABI match the one this tool knows.
#include "doctor/doctor.h"

#include "cache/base/safe_file.h"
#include "cache/base/unique_fd.h"
#include "kmod/include/uapi/gdrhook_ioctl.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace gdrhook::cli {

std::string describe_features(uint32_t features)
{
    std::string text;
    auto add = [&](uint32_t bit, const char *name) {
        if (features & bit)
            text += (text.empty() ? "" : ", ") + std::string(name);
    };
    add(GDRHOOK_FEATURE_NVP2P, "nv-p2p");
    // Which nvidia_p2p_* the module was built for: Tegra's (4 KiB ranges).
    add(GDRHOOK_FEATURE_NVP2P_TEGRA, "nv-p2p flavour tegra");
    add(GDRHOOK_FEATURE_NVP2P_PERSISTENT, "nv-p2p persistent");
    add(GDRHOOK_FEATURE_DMABUF, "dma-buf");
    add(GDRHOOK_FEATURE_GET_PAGES, "get-pages");
    add(GDRHOOK_FEATURE_HOST_PAGES, "host pages");
    return text.empty() ? "none" : text;
}

GdrhookDeviceFacts probe_gdrhook_device(const std::string &path)
{
    GdrhookDeviceFacts facts;
    facts.path = path;
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
        facts.open_errno = errno;
        facts.error = std::strerror(errno);
        return facts;
    }
    facts.present = true;
    // A character device owned by root, never a file planted at its name.
    OpenedFile opened = open_device(path.c_str());
    UniqueFd fd(opened.fd);
    if (!fd.valid()) {
        facts.open_errno = opened.error;
        facts.error = opened.error ? std::string("cannot open: ") + std::strerror(opened.error)
                                   : "it " + opened.why;
        return facts;
    }
    facts.opened = true;
    gdrhook_ioc_version version = {};
    if (ioctl(fd.get(), GDRHOOK_IOCTL_GET_VERSION, &version) != 0) {
        facts.error = std::string("GET_VERSION failed: ") + std::strerror(errno) +
                      (errno == ENOTTY ? " (not the gdrhook module's device)" : "");
        return facts;
    }
    facts.abi_major = version.abi_major;
    facts.abi_minor = version.abi_minor;
    facts.features = version.features;
    facts.max_handles = version.max_handles;
    facts.max_pinned_bytes = version.max_pinned_bytes;
    facts.compatible = version.abi_major == GDRHOOK_ABI_MAJOR;
    if (!facts.compatible)
        facts.error = "ABI " + std::to_string(version.abi_major) + "." +
                      std::to_string(version.abi_minor) + ", this tool speaks " +
                      std::to_string(GDRHOOK_ABI_MAJOR) + ".x";
    return facts;
}

} // namespace gdrhook::cli
