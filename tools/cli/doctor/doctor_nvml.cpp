// SPDX-License-Identifier: MIT OR GPL-2.0-only
// The doctor's questions to NVML: the driver version and BAR1 usage.
//
// The toolkit ships no nvml.h on every machine (it is in the driver's
// development package), so the few declarations needed are written here.
// They are NVML's stable C ABI: these entry points and the layout of
// nvmlBAR1Memory_t have not changed since NVML 3.
#include "doctor/machine_facts.h"
#include "doctor/shared_library.h"

namespace gdrhook::cli {

namespace {

using nvml_return = int; // nvmlReturn_t; 0 = NVML_SUCCESS
using nvml_device = struct nvml_device_opaque *;
struct nvml_bar1_memory {
    unsigned long long bar1_total;
    unsigned long long bar1_free;
    unsigned long long bar1_used;
};

using init_fn = nvml_return (*)();
using shutdown_fn = nvml_return (*)();
using error_string_fn = const char *(*)(nvml_return);
using driver_version_fn = nvml_return (*)(char *, unsigned int);
using handle_by_bus_id_fn = nvml_return (*)(const char *, nvml_device *);
using bar1_fn = nvml_return (*)(nvml_device, nvml_bar1_memory *);

} // namespace

NvmlFacts probe_nvml(const std::string &library, const std::vector<std::string> &pci_bus_ids)
{
    NvmlFacts facts;
    SharedLibrary lib;
    if (const Result<void> opened = lib.open(library); !opened) {
        facts.error = opened.why();
        return facts;
    }
    auto init = lib.function<init_fn>("nvmlInit_v2");
    auto shutdown = lib.function<shutdown_fn>("nvmlShutdown");
    auto error_string = lib.function<error_string_fn>("nvmlErrorString");
    auto driver_version = lib.function<driver_version_fn>("nvmlSystemGetDriverVersion");
    auto by_bus_id = lib.function<handle_by_bus_id_fn>("nvmlDeviceGetHandleByPciBusId_v2");
    auto bar1 = lib.function<bar1_fn>("nvmlDeviceGetBAR1MemoryInfo");
    auto describe = [&](nvml_return rc) {
        const char *text = error_string ? error_string(rc) : nullptr;
        return (text ? std::string(text) : std::string("error")) + " (" + std::to_string(rc) + ")";
    };
    if (!init || !shutdown || !by_bus_id || !bar1) {
        facts.error = "it lacks nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2 or "
                      "nvmlDeviceGetBAR1MemoryInfo";
        return facts;
    }
    nvml_return rc = init();
    if (rc != 0) {
        facts.error = "nvmlInit_v2 failed: " + describe(rc);
        return facts;
    }
    facts.loaded = true;
    char text[96] = {};
    if (driver_version && driver_version(text, sizeof text) == 0)
        facts.driver_version = text;
    // By PCI bus id, because NVML numbers GPUs in PCI order and CUDA, by
    // default, fastest first.
    for (const std::string &bus_id : pci_bus_ids) {
        NvmlFacts::Bar1 row;
        row.pci_bus_id = bus_id;
        nvml_device device = nullptr;
        nvml_bar1_memory memory = {};
        if (bus_id.empty()) {
            row.error = "no PCI bus id from CUDA";
        } else if ((rc = by_bus_id(bus_id.c_str(), &device)) != 0) {
            row.error = "nvmlDeviceGetHandleByPciBusId_v2: " + describe(rc);
        } else if ((rc = bar1(device, &memory)) != 0) {
            row.error = "nvmlDeviceGetBAR1MemoryInfo: " + describe(rc);
        } else {
            row.known = true;
            row.total = memory.bar1_total;
            row.used = memory.bar1_used;
        }
        facts.bar1.push_back(row);
    }
    shutdown();
    return facts;
}

} // namespace gdrhook::cli
