// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook node`'s GPUs, found in sysfs, numbered and named as DCGM does,
// their BAR1 asked of NVML (the doctor's probe, doctor_nvml.cpp).
#include "node/node_gpus.h"

#include "cache/base/safe_file.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace gdrhook::cli {
namespace {

std::string trimmed(std::string text)
{
    text.erase(text.find_last_not_of(" \n") + 1);
    return text;
}

// The name of the driver a PCI device is bound to, or "".
std::string bound_driver(const std::string &device_dir)
{
    char target[4096];
    const ssize_t n = ::readlink((device_dir + "/driver").c_str(), target, sizeof target - 1);
    if (n <= 0)
        return "";
    const std::string path(target, static_cast<size_t>(n));
    return path.substr(path.find_last_of('/') + 1);
}

} // namespace

std::vector<std::string> nvidia_gpus(const std::string &sys_root)
{
    std::vector<std::string> ids;
    const std::string dir = sys_root + "/bus/pci/devices/";
    std::vector<std::string> names;
    list_directory(dir, names);
    for (const std::string &name : names) {
        // A device that says no vendor or class is not counted.
        const std::string vendor = read_small_file((dir + name + "/vendor").c_str(), 64).value();
        const std::string device_class =
            read_small_file((dir + name + "/class").c_str(), 64).value();
        // Display controllers (0x03xxxx) of vendor NVIDIA that its driver
        // has: one bound to vfio-pci (passed to a VM) NVML does not count.
        if (trimmed(vendor) == "0x10de" && device_class.rfind("0x03", 0) == 0 &&
            bound_driver(dir + name) == "nvidia")
            ids.push_back(name);
    }
    // sysfs names sort as their bus ids do: fixed-width hex, one case.
    std::sort(ids.begin(), ids.end());
    return ids;
}

std::string dcgm_bus_id(const std::string &sysfs_bus_id)
{
    const size_t colon = sysfs_bus_id.find(':');
    std::string id = sysfs_bus_id;
    if (colon != std::string::npos && colon < 8)
        id.insert(0, 8 - colon, '0');
    for (char &c : id)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return id;
}

std::vector<NodeGpu> read_node_gpus(const std::string &sys_root, const std::string &libnvml,
                                    std::string &error)
{
    std::vector<NodeGpu> gpus;
    const std::vector<std::string> ids = nvidia_gpus(sys_root);
    if (ids.empty()) {
        error = "no NVIDIA GPU in " + sys_root + "/bus/pci/devices";
        return gpus;
    }
    const NvmlFacts nvml = probe_nvml(libnvml, ids);
    if (!nvml.loaded)
        error = libnvml + ": " + nvml.error;
    for (size_t i = 0; i < ids.size(); i++) {
        NodeGpu gpu;
        gpu.index = static_cast<int>(i);
        gpu.pci_bus_id = dcgm_bus_id(ids[i]);
        if (i < nvml.bar1.size()) {
            gpu.known = nvml.bar1[i].known;
            gpu.error = nvml.bar1[i].error;
            gpu.bar1_total = nvml.bar1[i].total;
            gpu.bar1_used = nvml.bar1[i].used;
        }
        gpus.push_back(gpu);
    }
    return gpus;
}

} // namespace gdrhook::cli
