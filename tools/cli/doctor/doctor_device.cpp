// SPDX-License-Identifier: MIT OR GPL-2.0-only
// The doctor's question to the kernel module: is /dev/gdrhook there, can
// this user open it, and does its ABI match the one this tool knows; and
// where it is not there, whether the running kernel has one installed. The
// asking is the shim's probe (cache/backends/module_probe.h); here it is
// put in words.
#include "doctor/doctor.h"

#include "cache/backends/module_probe.h"
#include "cache/base/safe_file.h"
#include "kmod/include/uapi/gdrhook_ioctl.h"

#include <sys/stat.h>
#include <sys/utsname.h>

#include <cerrno>
#include <cstring>
#include <sstream>

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

std::string probe_installed_module(const std::string &root)
{
    struct utsname names {};
    if (uname(&names) != 0)
        return "";
    // depmod's index, which modprobe reads: one line per module, its path
    // (relative to the kernel's folder) before the colon. DKMS runs depmod
    // after it installs the module, wherever it puts it (updates/dkms/ on
    // Debian, extra/ on RHEL) and however it is compressed.
    const std::string folder = std::string("/lib/modules/") + names.release;
    const Result<std::string> read =
        read_small_file((root + folder + "/modules.dep").c_str(), 16 << 20);
    if (!read)
        return "";
    const std::string &index = *read;
    std::istringstream lines(index);
    std::string line;
    while (std::getline(lines, line)) {
        const std::string file = line.substr(0, line.find(':'));
        const std::string name = file.substr(file.rfind('/') + 1);
        if (name == "gdrhook.ko" || name.rfind("gdrhook.ko.", 0) == 0)
            return file[0] == '/' ? file : folder + "/" + file;
    }
    return "";
}

} // namespace gdrhook::cli
