// SPDX-License-Identifier: MIT OR GPL-2.0-only
// Gathers every fact `gdrhook doctor` judges, in one pass: each probe
// (doctor_cuda.cpp, doctor_nvml.cpp, doctor_device.cpp, ...) asks one
// source; this asks them all.
#include "doctor/machine_facts.h"

#include "install/library_locator.h"

namespace gdrhook::cli {

ShimFacts probe_shim()
{
    ShimFacts shim;
    shim.library = find_shim("", shim.tried);
    return shim;
}

MachineFacts probe_machine(const MachineQuery &query)
{
    MachineFacts facts;
    facts.query = query;
    facts.platform = probe_platform();
    facts.shim = probe_shim();
    facts.cuda = probe_cuda(query.libcuda);
    std::vector<std::string> bus_ids;
    for (const auto &gpu : facts.cuda.gpus)
        bus_ids.push_back(gpu.pci_bus_id);
    facts.nvml = probe_nvml(query.libnvml, bus_ids);
    facts.device = probe_gdrhook_device(query.device);
    if (!facts.device.present) {
        facts.device.installed_module = probe_installed_module();
        facts.device.dkms = probe_dkms();
    }
    if (query.pid)
        facts.process = probe_process(query.pid);
    return facts;
}

} // namespace gdrhook::cli
