// SPDX-License-Identifier: MIT OR GPL-2.0-only
// The machine `gdrhook doctor` runs on: its architecture, whether it is an
// NVIDIA Tegra (Jetson, DRIVE), and which backends it allows.
#include "doctor/doctor.h"

#include "cache/base/safe_file.h"
#include "kmod/include/uapi/gdrhook_ioctl.h"

#include <sys/utsname.h>

namespace gdrhook::cli {
namespace {

std::string file_text(const std::string &path)
{
    // What could be read: a file that is absent says nothing.
    return read_small_file(path.c_str()).value();
}

bool readable(const std::string &path)
{
    return read_small_file(path.c_str(), 1).ok();
}

} // namespace

PlatformFacts probe_platform(const std::string &root)
{
    PlatformFacts facts;
    struct utsname names {};
    if (uname(&names) == 0)
        facts.architecture = names.machine;
    // L4T writes its release here; the device tree's root node names the
    // SoC ("nvidia,tegra234" on Orin, "nvidia,tegra264" on Thor), its
    // strings separated by NULs.
    if (readable(root + "/etc/nv_tegra_release")) {
        facts.tegra = true;
        facts.tegra_evidence = "/etc/nv_tegra_release";
    } else if (file_text(root + "/sys/firmware/devicetree/base/compatible").find("nvidia,tegra") !=
               std::string::npos) {
        facts.tegra = true;
        facts.tegra_evidence = "/sys/firmware/devicetree/base/compatible";
    }
    return facts;
}

std::string gpu_kind(int integrated)
{
    return integrated == 1 ? "integrated" : integrated == 0 ? "discrete" : "kind unknown";
}

} // namespace gdrhook::cli
