// SPDX-License-Identifier: MIT OR GPL-2.0-only
// The doctor's question to the kernel module: is /dev/gdrhook there, can
// this user open it, and does its ABI match the one this tool knows. The
// asking is the shim's probe (cache/backends/module_probe.h); here it is
// put in words.
#include "doctor/doctor.h"

#include "cache/backends/module_probe.h"
#include "kmod/include/uapi/gdrhook_ioctl.h"

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

namespace {

std::string problem_in_words(const ModuleFacts &module)
{
    if (!module.refused.empty())
        return "it " + module.refused;
    if (module.open_errno)
        return std::string("cannot open: ") + std::strerror(module.open_errno);
    if (!module.answers_version)
        return std::string("GET_VERSION failed: ") + std::strerror(module.version_errno) +
               (module.version_errno == ENOTTY ? " (not the gdrhook module's device)" : "");
    if (!module.abi_fits)
        return "ABI " + std::to_string(module.abi_major) + "." + std::to_string(module.abi_minor) +
               ", this tool speaks " + std::to_string(GDRHOOK_ABI_MAJOR) + ".x";
    return "";
}

} // namespace

GdrhookDeviceFacts probe_gdrhook_device(const std::string &path)
{
    GdrhookDeviceFacts facts;
    facts.path = path;
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
        facts.module.open_errno = errno;
        facts.error = std::strerror(errno);
        return facts;
    }
    facts.present = true;
    facts.module = probe_module(path).facts;
    facts.error = problem_in_words(facts.module);
    return facts;
}

} // namespace gdrhook::cli
