// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "cache/backends/backend_rule.h"
#include "cache/base/config.h"

#include <cstdint>
#include <iosfwd>
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

// What /dev/gdrhook says: the shim's own probe (cache/backends/
// module_probe.h), and whether the file exists at all.
struct GdrhookDeviceFacts {
    std::string path;
    bool present = false; // stat() found it
    ModuleFacts module;   // opened? GET_VERSION? ABI, features
    std::string error;    // what went wrong, in words, or empty
};

CudaFacts probe_cuda(const std::string &library);
NvmlFacts probe_nvml(const std::string &library, const std::vector<std::string> &pci_bus_ids);
GdrhookDeviceFacts probe_gdrhook_device(const std::string &path);
// The features bitmask in words ("nv-p2p, dma-buf").
std::string describe_features(uint32_t features);

// The machine (doctor_platform.cpp): uname's architecture, and whether
// it is a Tegra (L4T's /etc/nv_tegra_release, or the device tree's
// "nvidia,tegra..." compatible string), both read under `root`.
struct PlatformFacts {
    std::string architecture;
    bool tegra = false;
    std::string tegra_evidence; // the file that said so
};
PlatformFacts probe_platform(const std::string &root = "");

// The backends this machine allows, whatever GDRHOOK_BACKEND says
// (the module's side by the shim's rule, backend_rule.h).
struct AllowedBackends {
    bool kmod = false;           // /dev/gdrhook with an nv-p2p provider
    bool pin_user_pages = false; // /dev/gdrhook pinning host pages
    bool dmabuf = false;         // every GPU exports DMA-BUFs
};
AllowedBackends allowed_backends(const GdrhookDeviceFacts &device, const CudaFacts &cuda);
// "integrated", "discrete" or "kind unknown" for CudaFacts::Gpu::integrated.
std::string gpu_kind(int integrated);

// What the shim would pick for `wanted` on this GPU: the shim's rule
// (cache/backends/backend_rule.h) over the doctor's facts, the GPU's
// attributes read as the shim reads them (unknown is no).
BackendDecision judge_backend(Backend wanted, const GdrhookDeviceFacts &device,
                              const CudaFacts::Gpu &gpu);

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
    // (cache/base/config.h), and what it rejected or would warn of (a
    // GDRHOOK_* variable nothing reads, cache/base/unknown_variables.h).
    Config settings;
    std::vector<std::string> rejected;
    std::string ucx_cuda_hook_mode; // UCX_MEM_CUDA_HOOK_MODE, empty: UCX's default
};
ProcessFacts probe_process(int pid);

// Which one UCX's CUDA memory caches rely on to hear of frees in that
// process, in words; `problem` when nothing tells them.
struct UcxReliance {
    bool applies = false; // gdrhook and UCX both loaded
    bool problem = false;
    std::string what;
    std::string advice;
};
UcxReliance judge_ucx(const ProcessFacts &process);

struct DoctorOptions {
    std::string libcuda = "libcuda.so.1";
    std::string libnvml = "libnvidia-ml.so.1";
    std::string device = "/dev/gdrhook";
    int pid = 0;           // also look at this running process (0: none)
    bool settings = false; // only list the GDRHOOK_* settings
};

// Prints every check with its advice; exit_ok when nothing blocks pinning
// GPU memory through gdrhook, else exit_findings.
int run_doctor(const DoctorOptions &options, std::ostream &out);

// `doctor --settings`: the table of GDRHOOK_* variables (a Markdown table:
// variable, values, default, the value here), then any value the shim
// would reject, each in the shim's words; exit_findings if there is one.
int print_settings(std::ostream &out);

} // namespace gdrhook::cli
