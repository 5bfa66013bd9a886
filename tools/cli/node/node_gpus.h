// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once
// `gdrhook node`'s GPUs: numbered and named as DCGM does, so that its
// series join DCGM's (gpu, pci_bus_id), with BAR1 from NVML.

#include "node/node_command.h"

#include <string>
#include <vector>

namespace gdrhook::cli {

// The NVIDIA GPUs under SYS_ROOT/bus/pci/devices that the nvidia driver
// has (display controllers of vendor 0x10de bound to it), as sysfs names
// them (0000:3b:00.0), in PCI bus order: the order NVML, and so DCGM,
// numbers them in.
std::vector<std::string> nvidia_gpus(const std::string &sys_root);

// A sysfs bus id as NVML and DCGM write it: 0000:3b:00.0 -> 00000000:3B:00.0.
std::string dcgm_bus_id(const std::string &sysfs_bus_id);

// The GPUs with their BAR1 as LIBNVML reports it; ERROR says why there is
// none where there is none.
std::vector<NodeGpu> read_node_gpus(const std::string &sys_root, const std::string &libnvml,
                                    std::string &error);

} // namespace gdrhook::cli
