// SPDX-License-Identifier: MIT OR GPL-2.0-only
// The doctor's verdicts: what each fact probe_machine() gathered means
// and what to do about it. Pure: facts in, findings out.
#include "doctor/doctor_judge.h"

#include "report/units.h"
#include "terminal/terminal_text.h"

#include <cerrno>

namespace gdrhook::cli {

namespace {

class Findings {
public:
    void ok(const std::string &what) { add(Finding::Verdict::ok, what); }
    void note(const std::string &what) { add(Finding::Verdict::note, what); }
    void problem(const std::string &what) { add(Finding::Verdict::problem, what); }
    // What to do about the finding just added.
    void advice(const std::string &what) { list.back().advice = what; }
    std::vector<Finding> list;

private:
    void add(Finding::Verdict verdict, const std::string &what)
    {
        list.push_back({verdict, what, ""});
    }
};

// The packages' udev rule (kmod/packaging/udev/70-gdrhook.rules) gives
// /dev/gdrhook to group gdrhook, mode 0660, and their sysusers.d file
// makes the group: who pins is who is in it.
std::string no_access_advice(const std::string &path)
{
    return "add this user to the group gdrhook, which the packages' udev rule gives " + path +
           " (mode 0660): sudo usermod -aG gdrhook USER, then log in again";
}

std::string yes_no(int value)
{
    return value == 1 ? "yes" : value == 0 ? "no" : "unknown";
}

void judge_cuda(Findings &r, const std::string &libcuda, const CudaFacts &cuda)
{
    if (!cuda.loaded) {
        r.problem(libcuda + ": not found: " + cuda.error);
        r.advice("install the NVIDIA driver (it provides libcuda.so.1); check `ldconfig -p | grep "
                 "libcuda`; in a container, run with the NVIDIA container toolkit "
                 "(--gpus all) so the driver's libraries are mounted");
        return;
    }
    std::string version = cuda.driver_version
                              ? "CUDA " + std::to_string(cuda.driver_version / 1000) + "." +
                                    std::to_string(cuda.driver_version % 1000 / 10)
                              : "version unknown";
    if (!cuda.initialised) {
        r.problem(libcuda + " (" + cuda.path + ", " + version + "): " + cuda.error);
        r.advice("check that the kernel driver is loaded (nvidia-smi, /proc/driver/nvidia/version) "
                 "and that /dev/nvidia* are accessible to this user");
        return;
    }
    r.ok(libcuda + ": " + cuda.path + " (" + version + ")");
    if (cuda.gpus.empty()) {
        r.problem("no GPU visible to CUDA");
        r.advice("check CUDA_VISIBLE_DEVICES and nvidia-smi");
    }
}

void judge_gpus(Findings &r, const CudaFacts &cuda, const NvmlFacts &nvml)
{
    for (size_t i = 0; i < cuda.gpus.size(); ++i) {
        const auto &gpu = cuda.gpus[i];
        std::string text = "GPU " + std::to_string(gpu.ordinal) + ": " + gpu.name +
                           (gpu.pci_bus_id.empty() ? "" : " (" + gpu.pci_bus_id + ")") + ", " +
                           gpu_kind(gpu.integrated) + ": DMA-BUF " + yes_no(gpu.dma_buf) +
                           ", GPUDirect RDMA " + yes_no(gpu.gpudirect_rdma);
        if (i < nvml.bar1.size() && nvml.bar1[i].known)
            text += ", BAR1 " + format_bytes(static_cast<double>(nvml.bar1[i].total)) + " total, " +
                    format_bytes(static_cast<double>(nvml.bar1[i].used)) + " used";
        else if (nvml.loaded && i < nvml.bar1.size())
            text += ", BAR1 unknown (" + nvml.bar1[i].error + ")";
        if (gpu.dma_buf == 1 || gpu.gpudirect_rdma == 1)
            r.ok(text);
        else {
            r.problem(text);
            r.advice("this GPU supports neither DMA-BUF export nor GPUDirect RDMA: RDMA to its "
                     "memory cannot work; DMA-BUF needs an open-kernel-module driver (>= 515) "
                     "and a kernel with dma-buf");
        }
        if (i < nvml.bar1.size() && nvml.bar1[i].known && nvml.bar1[i].total &&
            nvml.bar1[i].used * 10 > nvml.bar1[i].total * 9) {
            r.note("GPU " + std::to_string(gpu.ordinal) + ": BAR1 is over 90% used");
            r.advice("pins map GPU memory through BAR1; free registrations you do not need, "
                     "or lower GDRHOOK_CACHE_MAX_BYTES");
        }
    }
}

void judge_nvml(Findings &r, const std::string &libnvml, const NvmlFacts &nvml, bool cuda_ok)
{
    if (nvml.loaded) {
        r.ok(libnvml + ": driver " +
             (nvml.driver_version.empty() ? std::string("version unknown") : nvml.driver_version));
        return;
    }
    // Without libcuda this adds nothing: both come with the driver.
    if (!cuda_ok)
        return;
    r.note(libnvml + ": " + nvml.error + " (BAR1 usage not shown)");
    r.advice(
        "NVML comes with the driver (Debian: libnvidia-ml1); it is only used for BAR1 figures");
}

// No /dev/gdrhook: what is missing, from where the module would come. A
// packaged install (gdrhook-dkms) has the module in the running kernel's
// tree once DKMS built it, which needs that kernel's headers; a source
// build has it in its build folder's kmod/.
void judge_absent_device(Findings &r, const GdrhookDeviceFacts &device)
{
    const std::string absent = device.path + ": not present (" + device.error + ")";
    const DkmsFacts &dkms = device.dkms;
    if (!device.installed_module.empty()) {
        r.note(absent + ": the kmod backend is unavailable");
        r.advice("to use it, load the installed module: sudo modprobe gdrhook (" +
                 device.installed_module + ")");
        return;
    }
    if (dkms.versions.empty()) {
        r.note(absent + ": the kmod backend is unavailable");
        r.advice("to use it, install the gdrhook-dkms package, or load the module a "
                 "build made (meson builds it where the kernel's headers are): sudo insmod "
                 "BUILD/kmod/gdrhook.ko");
        return;
    }
    const std::string release = dkms.running_release;
    const std::string build =
        "sudo dkms install gdrhook/" + dkms.versions.back() + " -k " + release;
    std::string built = "built for no kernel";
    if (!dkms.built_kernels.empty()) {
        built = "built for";
        for (const std::string &kernel : dkms.built_kernels)
            built += " " + kernel;
    }
    const std::string known = "DKMS has gdrhook " + dkms.versions.back() + ", " + built;
    if (!dkms.headers_for_running) {
        r.note(absent + ": gdrhook-dkms is installed but the running kernel " + release +
               " has no headers, so DKMS could not build the module for it (" + known + ")");
        r.advice("install the running kernel's headers (Debian: sudo apt-get install "
                 "linux-headers-" +
                 release + "; RHEL: sudo dnf install kernel-devel-" + release +
                 "), then: " + build + " && sudo modprobe gdrhook");
    } else if (!dkms.built_for_running) {
        r.note(absent + ": gdrhook-dkms is installed and the running kernel " + release +
               " has headers, but the module is not built for it (" + known + ")");
        r.advice("build and load it: " + build +
                 " && sudo modprobe gdrhook; a failed build leaves its log in /var/lib/dkms/"
                 "gdrhook/" +
                 dkms.versions.back() + "/build/make.log");
    } else {
        r.note(absent + ": DKMS built the module for the running kernel " + release +
               " but it is not installed where modprobe looks (" + known + ")");
        r.advice("install and load it: " + build + " && sudo modprobe gdrhook");
    }
}

void judge_device(Findings &r, const GdrhookDeviceFacts &device)
{
    if (!device.present) {
        judge_absent_device(r, device);
        return;
    }
    const ModuleFacts &module = device.module;
    if (module.open_errno) {
        r.problem(device.path + ": present but " + device.error);
        if (module.open_errno == EACCES || module.open_errno == EPERM)
            r.advice(no_access_advice(device.path));
        return;
    }
    if (!device.error.empty()) {
        r.problem(device.path + ": " + device.error);
        r.advice("load the gdrhook.ko built from the same source as this tool");
        return;
    }
    r.ok(device.path + ": ABI " + std::to_string(module.abi_major) + "." +
         std::to_string(module.abi_minor) + ", features: " + describe_features(module.features) +
         ", up to " + std::to_string(module.max_handles) + " pins and " +
         format_bytes(static_cast<double>(module.max_pinned_bytes)) + " per open file");
}

void judge_platform(Findings &r, const PlatformFacts &platform)
{
    r.note("platform: " + platform.architecture +
           (platform.tegra ? ", NVIDIA Tegra (" + platform.tegra_evidence + ")" : ", not a Tegra"));
}

void judge_allowed(Findings &r, const GdrhookDeviceFacts &device, const CudaFacts &cuda)
{
    const AllowedBackends allowed = allowed_backends(device, cuda);
    std::string text = "backends this machine allows:";
    for (const BackendRow &row : backend_rows)
        text += std::string(&row == backend_rows ? " " : ", ") + to_string(row.kind) +
                (allowed[row.kind] ? " yes" : " no");
    r.note(text);
}

// What the shim would pick on each GPU (it decides for the GPU current
// when it starts), or with no GPU to ask.
void judge_pick(Findings &r, const GdrhookDeviceFacts &device, const CudaFacts &cuda)
{
    std::vector<CudaFacts::Gpu> gpus = cuda.initialised ? cuda.gpus : std::vector<CudaFacts::Gpu>{};
    const bool no_gpu = gpus.empty();
    if (no_gpu)
        gpus.emplace_back();
    for (const auto &gpu : gpus) {
        const BackendDecision pick = judge_backend(Backend::auto_select, device, gpu);
        std::string text =
            (no_gpu ? "with no GPU, " : "GPU " + std::to_string(gpu.ordinal) + ": ") +
            "GDRHOOK_BACKEND=auto would pick " + to_string(pick.kind) + ": " + pick.reason;
        if (pick.kind != BackendKind::none) {
            r.ok(text);
            continue;
        }
        r.problem(text);
        r.advice("with no backend gdrhook tracks frees but pins nothing; fix the problems above");
    }
}

void judge_shim(Findings &r, const ShimFacts &shim)
{
    if (!shim.library.empty()) {
        r.ok("libgdrhook.so: " + shim.library + " (what gdrhook run preloads)");
        return;
    }
    r.problem("libgdrhook.so: not found next to this tool");
    std::string places;
    for (const auto &path : shim.tried)
        places += (places.empty() ? "" : ", ") + path;
    r.advice("looked at " + places + "; build it, or set GDRHOOK_LIBRARY");
}

void judge_process(Findings &r, const ProcessFacts &p)
{
    const std::string who = "process " + std::to_string(p.pid);
    if (!p.found) {
        r.problem(who + ": " + p.error);
        return;
    }
    // The paths the process mapped and the values of its environment are
    // its own bytes: escaped for root's terminal.
    r.note(who + ": gdrhook " +
           (p.gdrhook.empty() ? "not loaded" : "loaded (" + terminal_text(p.gdrhook) + ")") +
           ", UCX's libucm " +
           (p.ucm.empty() ? "not loaded" : "loaded (" + terminal_text(p.ucm) + ")") +
           (p.ucm.empty()        ? ""
            : p.ucm_cuda.empty() ? ", its CUDA module not loaded"
                                 : ", its CUDA module loaded"));
    for (const std::string &line : p.rejected)
        r.note(who + ": " + terminal_text(line));
    const UcxReliance ucx = judge_ucx(p);
    if (!ucx.applies)
        return;
    if (ucx.problem)
        r.problem(who + ": " + ucx.what);
    else
        r.ok(who + ": " + ucx.what);
    if (!ucx.advice.empty())
        r.advice(ucx.advice);
}

} // namespace

std::vector<Finding> judge_machine(const MachineFacts &facts)
{
    Findings r;
    judge_platform(r, facts.platform);
    judge_shim(r, facts.shim);
    judge_cuda(r, facts.query.libcuda, facts.cuda);
    judge_nvml(r, facts.query.libnvml, facts.nvml, facts.cuda.initialised);
    judge_gpus(r, facts.cuda, facts.nvml);
    judge_device(r, facts.device);
    judge_allowed(r, facts.device, facts.cuda);
    if (facts.process)
        judge_process(r, *facts.process);
    judge_pick(r, facts.device, facts.cuda);
    return r.list;
}

} // namespace gdrhook::cli
