// SPDX-License-Identifier: MIT OR GPL-2.0-only
// What `gdrhook doctor` finds on the machine: facts only, no verdicts
// (doctor_judge.h says what they mean). `gdrhook node` asks the same
// probes (probe_nvml).
#pragma once

#include "cache/backends/backend_rule.h"
#include "cache/base/config.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gdrhook::cli {

// What the CUDA driver says, through a dlopen'ed libcuda.so.1.
struct CudaFacts {
    bool loaded = false;
    std::string error;      // why it could not be loaded or initialised
    std::string path;       // the file the loader picked
    int driver_version = 0; // cuDriverGetVersion: 13000 = CUDA 13.0
    bool initialised = false;
    struct Gpu {
        int ordinal = 0;
        std::string name;
        std::string pci_bus_id;  // "0000:1B:00.0", "" if unknown
        int dma_buf = -1;        // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, -1 unknown
        int gpudirect_rdma = -1; // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
        int integrated = -1;     // CU_DEVICE_ATTRIBUTE_INTEGRATED: shares host memory
    };
    std::vector<Gpu> gpus;
};

// What NVML says: driver version and BAR1 per GPU (by PCI bus id).
struct NvmlFacts {
    bool loaded = false;
    std::string error;
    std::string driver_version;
    struct Bar1 {
        std::string pci_bus_id;
        bool known = false;
        std::string error;
        uint64_t total = 0;
        uint64_t used = 0;
    };
    std::vector<Bar1> bar1; // in the order of the bus ids asked for
};

// What DKMS holds of gdrhook (doctor_dkms.cpp): the gdrhook-dkms package
// registers the module's source with DKMS, which builds it for each kernel
// whose headers are installed. A kernel booted without its headers is the
// commonest reason a packaged node has no /dev/gdrhook.
struct DkmsFacts {
    std::string running_release;            // uname's
    std::vector<std::string> versions;      // gdrhook versions DKMS knows
    std::vector<std::string> built_kernels; // kernels some version is built for
    bool built_for_running = false;
    bool headers_for_running = false; // /lib/modules/RELEASE/build
};

// What /dev/gdrhook says: the shim's own probe (cache/backends/
// module_probe.h), and whether the file exists at all.
struct GdrhookDeviceFacts {
    std::string path;
    bool present = false; // stat() found it
    ModuleFacts module;   // opened? GET_VERSION? ABI, features
    std::string error;    // what went wrong, in words, or empty
    // The running kernel's gdrhook.ko where one is installed (DKMS's, a
    // package's), as modprobe finds it; empty where there is none.
    std::string installed_module;
    DkmsFacts dkms; // read where the device is not present
};

CudaFacts probe_cuda(const std::string &library);
NvmlFacts probe_nvml(const std::string &library, const std::vector<std::string> &pci_bus_ids);
GdrhookDeviceFacts probe_gdrhook_device(const std::string &path);
// The module file of the running kernel (uname's release) that modprobe
// would load, from modules.dep under `root`/lib/modules; "" if none.
std::string probe_installed_module(const std::string &root = "");
// DKMS's state of gdrhook under `root`/var/lib/dkms, and whether the
// running kernel's headers are under `root`/lib/modules.
DkmsFacts probe_dkms(const std::string &root = "");

// The machine (doctor_platform.cpp): uname's architecture, and whether
// it is a Tegra (L4T's /etc/nv_tegra_release, or the device tree's
// "nvidia,tegra..." compatible string), both read under `root`.
struct PlatformFacts {
    std::string architecture;
    bool tegra = false;
    std::string tegra_evidence; // the file that said so
};
PlatformFacts probe_platform(const std::string &root = "");

// What a running process has loaded and was started with, from /proc:
// gdrhook, UCX's libucm and its CUDA module (which installs UCX's own CUDA
// hooks), and the settings that decide between them.
struct ProcessFacts {
    int pid = 0;
    bool found = false;
    std::string error;
    std::string gdrhook;  // the mapped libgdrhook.so, or empty
    std::string ucm;      // the mapped libucm.so.0, or empty
    std::string ucm_cuda; // the mapped libucm_cuda.so, or empty
    // The process's GDRHOOK_* settings, read by the shim's own parser
    // (cache/base/config.h), and what it rejected.
    Config settings;
    std::vector<std::string> rejected;
    std::string ucx_cuda_hook_mode; // UCX_MEM_CUDA_HOOK_MODE, empty: UCX's default
};
ProcessFacts probe_process(int pid);

// Where the shim is, as `gdrhook run` looks for it: the library found
// (empty if none) and every place looked at.
struct ShimFacts {
    std::string library;
    std::vector<std::string> tried;
};
ShimFacts probe_shim();

// What to ask: the libraries and the device (their names also appear in
// the verdicts), and a running process to look at (0: none).
struct MachineQuery {
    std::string libcuda = "libcuda.so.1";
    std::string libnvml = "libnvidia-ml.so.1";
    std::string device = "/dev/gdrhook";
    int pid = 0;
};

// Everything the doctor looks at, gathered once.
struct MachineFacts {
    MachineQuery query;
    PlatformFacts platform;
    ShimFacts shim;
    CudaFacts cuda;
    NvmlFacts nvml; // BAR1 of cuda's GPUs, in their order
    GdrhookDeviceFacts device;
    std::optional<ProcessFacts> process; // with query.pid
};
MachineFacts probe_machine(const MachineQuery &query);

} // namespace gdrhook::cli
