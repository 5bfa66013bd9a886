// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook doctor`: gathers the facts (doctor_cuda.cpp, doctor_nvml.cpp,
// doctor_device.cpp), then says for each what it means and what to do.
#include "doctor/doctor.h"

#include "exit_code.h"
#include "report/terminal_text.h"
#include "report/units.h"
#include "run/library_locator.h"

#include <cerrno>
#include <cstdlib>
#include <ostream>

namespace gdrhook::cli {

namespace {

class Report {
public:
    explicit Report(std::ostream &out) : out_(out) {}
    void ok(const std::string &what) { line("ok", what); }
    void note(const std::string &what) { line("--", what); }
    void problem(const std::string &what)
    {
        ++problems_;
        line("FAIL", what);
    }
    void advice(const std::string &what) { out_ << "         -> " << what << '\n'; }
    int problems() const { return problems_; }

private:
    void line(const char *tag, const std::string &what)
    {
        std::string label = std::string("[") + tag + "]";
        out_ << "  " << label << std::string(7 - label.size(), ' ') << what << '\n';
    }
    std::ostream &out_;
    int problems_ = 0;
};

std::string yes_no(int value)
{
    return value == 1 ? "yes" : value == 0 ? "no" : "unknown";
}

void report_cuda(Report &r, const DoctorOptions &options, const CudaFacts &cuda)
{
    if (!cuda.loaded) {
        r.problem(options.libcuda + ": not found: " + cuda.error);
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
        r.problem(options.libcuda + " (" + cuda.path + ", " + version + "): " + cuda.error);
        r.advice("check that the kernel driver is loaded (nvidia-smi, /proc/driver/nvidia/version) "
                 "and that /dev/nvidia* are accessible to this user");
        return;
    }
    r.ok(options.libcuda + ": " + cuda.path + " (" + version + ")");
    if (cuda.gpus.empty()) {
        r.problem("no GPU visible to CUDA");
        r.advice("check CUDA_VISIBLE_DEVICES and nvidia-smi");
    }
}

void report_gpus(Report &r, const CudaFacts &cuda, const NvmlFacts &nvml)
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

void report_nvml(Report &r, const DoctorOptions &options, const NvmlFacts &nvml, bool cuda_ok)
{
    if (nvml.loaded) {
        r.ok(options.libnvml + ": driver " +
             (nvml.driver_version.empty() ? std::string("version unknown") : nvml.driver_version));
        return;
    }
    // Without libcuda this adds nothing: both come with the driver.
    if (!cuda_ok)
        return;
    r.note(options.libnvml + ": " + nvml.error + " (BAR1 usage not shown)");
    r.advice(
        "NVML comes with the driver (Debian: libnvidia-ml1); it is only used for BAR1 figures");
}

void report_device(Report &r, const GdrhookDeviceFacts &device)
{
    if (!device.present) {
        r.note(device.path + ": not present (" + device.error +
               "): the kmod backend is unavailable");
        r.advice("to use it, load the module: sudo insmod kmod/gdrhook.ko (after building it: "
                 "kmod/build.sh), or modprobe gdrhook once installed");
        return;
    }
    const ModuleFacts &module = device.module;
    if (module.open_errno) {
        r.problem(device.path + ": present but " + device.error);
        if (module.open_errno == EACCES || module.open_errno == EPERM)
            r.advice("give this user access: a udev rule setting its group or mode "
                     "(e.g. MODE=\"0666\" or GROUP=\"video\")");
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

void report_platform(Report &r, const PlatformFacts &platform)
{
    r.note("platform: " + platform.architecture +
           (platform.tegra ? ", NVIDIA Tegra (" + platform.tegra_evidence + ")" : ", not a Tegra"));
}

void report_allowed(Report &r, const GdrhookDeviceFacts &device, const CudaFacts &cuda)
{
    const AllowedBackends allowed = allowed_backends(device, cuda);
    r.note(std::string("backends this machine allows: kmod ") + (allowed.kmod ? "yes" : "no") +
           ", pin_user_pages " + (allowed.pin_user_pages ? "yes" : "no") + ", dmabuf " +
           (allowed.dmabuf ? "yes" : "no") + ", none yes");
}

// What the shim would pick on each GPU (it decides for the GPU current
// when it starts), or with no GPU to ask.
void report_pick(Report &r, const GdrhookDeviceFacts &device, const CudaFacts &cuda)
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

void report_shim(Report &r)
{
    std::vector<std::string> tried;
    const char *env = std::getenv("GDRHOOK_LIBRARY");
    std::string library = find_library(executable_dir(), env ? env : "", tried);
    if (!library.empty()) {
        r.ok("libgdrhook.so: " + library + " (what gdrhook run preloads)");
        return;
    }
    r.problem("libgdrhook.so: not found next to this tool");
    std::string places;
    for (const auto &path : tried)
        places += (places.empty() ? "" : ", ") + path;
    r.advice("looked at " + places + "; build it, or set GDRHOOK_LIBRARY");
}

void report_process(Report &r, const ProcessFacts &p)
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

int run_doctor(const DoctorOptions &options, std::ostream &out)
{
    if (options.settings)
        return print_settings(out);
    CudaFacts cuda = probe_cuda(options.libcuda);
    std::vector<std::string> bus_ids;
    for (const auto &gpu : cuda.gpus)
        bus_ids.push_back(gpu.pci_bus_id);
    NvmlFacts nvml = probe_nvml(options.libnvml, bus_ids);
    GdrhookDeviceFacts device = probe_gdrhook_device(options.device);

    out << "gdrhook doctor\n";
    Report r(out);
    report_platform(r, probe_platform());
    report_shim(r);
    report_cuda(r, options, cuda);
    report_nvml(r, options, nvml, cuda.initialised);
    report_gpus(r, cuda, nvml);
    report_device(r, device);

    report_allowed(r, device, cuda);
    if (options.pid)
        report_process(r, probe_process(options.pid));

    report_pick(r, device, cuda);

    if (r.problems()) {
        out << "gdrhook doctor: " << r.problems() << " problem(s) found\n";
        return exit_findings;
    }
    out << "gdrhook doctor: no problems found\n";
    return exit_ok;
}

} // namespace gdrhook::cli
