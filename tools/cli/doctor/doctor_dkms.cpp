// SPDX-License-Identifier: MIT OR GPL-2.0-only
// DKMS's state of gdrhook, read from its tree rather than by running
// `dkms status` (whose output changed between DKMS 2 and 3, and which a
// node image may lack): /var/lib/dkms/gdrhook/VERSION/ holds a `source`
// link, a `build` folder and one folder per kernel the version was built
// for. With the running kernel's headers, /lib/modules/RELEASE/build,
// DKMS can build for it; without them it cannot.
#include "doctor/doctor.h"

#include <sys/utsname.h>

#include <algorithm>
#include <filesystem>

namespace gdrhook::cli {
namespace {

// The folders in DIR, sorted; none where DIR cannot be read.
std::vector<std::string> folders_in(const std::filesystem::path &dir)
{
    std::vector<std::string> names;
    std::error_code error;
    for (const auto &entry : std::filesystem::directory_iterator(dir, error))
        if (!entry.is_symlink() && entry.is_directory(error))
            names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

} // namespace

DkmsFacts probe_dkms(const std::string &root)
{
    DkmsFacts facts;
    struct utsname names {};
    if (uname(&names) == 0)
        facts.running_release = names.release;
    std::error_code error;
    facts.headers_for_running =
        !facts.running_release.empty() &&
        std::filesystem::exists(root + "/lib/modules/" + facts.running_release + "/build", error);
    const std::filesystem::path module = root + "/var/lib/dkms/gdrhook";
    for (const std::string &version : folders_in(module)) {
        facts.versions.push_back(version);
        for (const std::string &kernel : folders_in(module / version)) {
            if (kernel == "build")
                continue; // DKMS's scratch folder, not a kernel
            if (std::find(facts.built_kernels.begin(), facts.built_kernels.end(), kernel) ==
                facts.built_kernels.end())
                facts.built_kernels.push_back(kernel);
            facts.built_for_running |= kernel == facts.running_release;
        }
    }
    return facts;
}

} // namespace gdrhook::cli
