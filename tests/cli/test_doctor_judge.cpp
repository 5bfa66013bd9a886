// SPDX-License-Identifier: MIT OR GPL-2.0-only
// The doctor's judge (doctor_judge.h) on machines made by hand: no
// driver, no module, no /proc is touched.
#include "doctor/doctor_judge.h"

#include "kmod/include/uapi/gdrhook_ioctl.h"

#include <catch2/catch.hpp>

#include <cerrno>

using namespace gdrhook::cli;

namespace {

// A machine with the shim built, a working driver with one discrete GPU
// that exports dma-bufs, and a module that pins through nv-p2p.
MachineFacts healthy_machine()
{
    MachineFacts m;
    m.platform.architecture = "x86_64";
    m.shim.library = "/usr/lib/x86_64-linux-gnu/libgdrhook.so";
    m.cuda.loaded = m.cuda.initialised = true;
    m.cuda.path = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
    m.cuda.driver_version = 13000;
    CudaFacts::Gpu gpu;
    gpu.name = "made-up GPU";
    gpu.dma_buf = gpu.gpudirect_rdma = 1;
    gpu.integrated = 0;
    m.cuda.gpus = {gpu};
    m.nvml.loaded = true;
    m.device.path = "/dev/gdrhook";
    m.device.present = true;
    m.device.module.open_errno = 0;
    m.device.module.answers_version = m.device.module.abi_fits = true;
    m.device.module.abi_major = GDRHOOK_ABI_MAJOR;
    m.device.module.features = GDRHOOK_FEATURE_NVP2P | GDRHOOK_FEATURE_DMABUF;
    m.device.module.nvp2p = true;
    return m;
}

int problems(const std::vector<Finding> &findings)
{
    int n = 0;
    for (const Finding &f : findings)
        n += f.verdict == Finding::Verdict::problem;
    return n;
}

// The finding whose text has `what`; fails the test when there is none.
Finding find(const std::vector<Finding> &findings, const std::string &what)
{
    for (const Finding &f : findings)
        if (f.what.find(what) != std::string::npos)
            return f;
    FAIL("no finding says: " << what);
    return {};
}

// A healthy machine where /dev/gdrhook does not exist.
MachineFacts machine_without_device()
{
    MachineFacts m = healthy_machine();
    m.device = {};
    m.device.path = "/dev/gdrhook";
    m.device.error = "No such file or directory";
    return m;
}

} // namespace

TEST_CASE("a healthy machine has no problem, and auto picks kmod", "[doctor]")
{
    const std::vector<Finding> findings = judge_machine(healthy_machine());
    CHECK(problems(findings) == 0);
    CHECK(find(findings, "auto would pick kmod").verdict == Finding::Verdict::ok);
}

TEST_CASE("the doctor lists each backend of the table, as its row judges it", "[doctor]")
{
    const std::string allows = "backends this machine allows: ";
    MachineFacts m = healthy_machine();
    CHECK(find(judge_machine(m), allows).what ==
          allows + "none yes, dmabuf yes, kmod yes, pin_user_pages no");
    // dma-buf is allowed only where every GPU reports it; a GPU that
    // cannot say is read as the shim reads it, no.
    m.cuda.gpus.push_back(m.cuda.gpus[0]);
    m.cuda.gpus[0].dma_buf = -1;
    m.device.module.host_pages = true;
    CHECK(find(judge_machine(m), allows).what ==
          allows + "none yes, dmabuf no, kmod yes, pin_user_pages yes");
    m = healthy_machine();
    m.cuda.initialised = false; // no GPU to ask
    m.device.module.nvp2p = false;
    CHECK(find(judge_machine(m), allows).what ==
          allows + "none yes, dmabuf no, kmod no, pin_user_pages no");
}

TEST_CASE("a /dev/gdrhook this user may not open: the advice names the packaged group", "[doctor]")
{
    for (const int no : {EACCES, EPERM}) {
        MachineFacts m = healthy_machine();
        m.device.module.open_errno = no;
        m.device.module.answers_version = m.device.module.abi_fits = false;
        m.device.error = "cannot open: Permission denied";
        const std::vector<Finding> findings = judge_machine(m);
        const Finding f = find(findings, "/dev/gdrhook: present but cannot open");
        CHECK(f.verdict == Finding::Verdict::problem);
        // The group the packages' udev rule gives the device to
        // (kmod/packaging/udev/70-gdrhook.rules), and nothing wider.
        CHECK_THAT(f.advice, Catch::Contains("group gdrhook"));
        CHECK_THAT(f.advice, !Catch::Contains("0666"));
        CHECK_THAT(f.advice, !Catch::Contains("video"));
        // Without the module, dma-buf is still there to pick.
        CHECK(find(findings, "auto would pick dmabuf").verdict == Finding::Verdict::ok);
    }
}

TEST_CASE("no driver: one problem per missing thing, each with advice", "[doctor]")
{
    MachineFacts m = healthy_machine();
    m.query.libcuda = "/nowhere/libcuda.so.1";
    m.cuda = {};
    m.cuda.error = "cannot open shared object file";
    m.nvml = {};
    m.nvml.error = "not found";
    m.device = {};
    m.device.path = "/dev/gdrhook";
    m.device.error = "No such file or directory";
    m.shim = {};
    m.shim.tried = {"/a/libgdrhook.so", "/b/libgdrhook.so"};
    const std::vector<Finding> findings = judge_machine(m);

    const Finding cuda = find(findings, "/nowhere/libcuda.so.1: not found");
    CHECK(cuda.verdict == Finding::Verdict::problem);
    CHECK_THAT(cuda.advice, Catch::Contains("install the NVIDIA driver"));
    const Finding shim = find(findings, "libgdrhook.so: not found");
    CHECK_THAT(shim.advice, Catch::Contains("/a/libgdrhook.so, /b/libgdrhook.so"));
    CHECK(find(findings, "/dev/gdrhook: not present").verdict == Finding::Verdict::note);
    const Finding pick = find(findings, "with no GPU, GDRHOOK_BACKEND=auto would pick none");
    CHECK(pick.verdict == Finding::Verdict::problem);
    CHECK(problems(findings) == 3); // the driver, the shim, the pick; NVML only without driver
    for (const Finding &f : findings)
        CHECK(f.what.find("libnvidia-ml") == std::string::npos);
}

TEST_CASE("no /dev/gdrhook: a packaged module is loaded with modprobe, a built one with insmod",
          "[doctor]")
{
    MachineFacts m = machine_without_device();
    m.device.installed_module = "/lib/modules/6.1.0-56-amd64/updates/dkms/gdrhook.ko.xz";
    const Finding packaged = find(judge_machine(m), "/dev/gdrhook: not present");
    CHECK_THAT(packaged.advice, Catch::Contains("sudo modprobe gdrhook"));
    CHECK_THAT(packaged.advice, Catch::Contains(m.device.installed_module));
    CHECK_THAT(packaged.advice, !Catch::Contains("insmod"));

    m.device.installed_module.clear();
    const Finding built = find(judge_machine(m), "/dev/gdrhook: not present");
    CHECK_THAT(built.advice, Catch::Contains("sudo insmod BUILD/kmod/gdrhook.ko"));
    CHECK_THAT(built.advice, !Catch::Contains("modprobe"));
}

TEST_CASE("no /dev/gdrhook with gdrhook-dkms installed: DKMS's state says what is missing",
          "[doctor]")
{
    MachineFacts m = machine_without_device();
    m.device.dkms.running_release = "6.1.0-99-amd64";
    m.device.dkms.versions = {"0.1.0+git506.259577a"};
    m.device.dkms.built_kernels = {"6.1.0-56-amd64"};

    // The commonest packaged failure: a new kernel booted without headers.
    const Finding no_headers = find(judge_machine(m), "/dev/gdrhook: not present");
    CHECK_THAT(no_headers.what, Catch::Contains("6.1.0-99-amd64"));
    CHECK_THAT(no_headers.what, Catch::Contains("headers"));
    CHECK_THAT(no_headers.advice, Catch::Contains("linux-headers-6.1.0-99-amd64"));
    CHECK_THAT(no_headers.advice, Catch::Contains("kernel-devel-6.1.0-99-amd64"));
    CHECK_THAT(no_headers.advice,
               Catch::Contains("sudo dkms install gdrhook/0.1.0+git506.259577a -k 6.1.0-99-amd64"));
    CHECK_THAT(no_headers.advice, !Catch::Contains("install the gdrhook-dkms package"));
    CHECK_THAT(no_headers.advice, !Catch::Contains("insmod"));

    // Headers there, no module built for them: DKMS's build failed or never ran.
    m.device.dkms.headers_for_running = true;
    const Finding not_built = find(judge_machine(m), "/dev/gdrhook: not present");
    CHECK_THAT(not_built.what, Catch::Contains("not built"));
    CHECK_THAT(not_built.advice,
               Catch::Contains("sudo dkms install gdrhook/0.1.0+git506.259577a -k 6.1.0-99-amd64"));
    CHECK_THAT(not_built.advice, Catch::Contains("make.log"));
    CHECK_THAT(not_built.advice, !Catch::Contains("linux-headers"));

    // Built but not in modprobe's index (depmod not run, or installed by hand).
    m.device.dkms.built_kernels.push_back("6.1.0-99-amd64");
    m.device.dkms.built_for_running = true;
    const Finding built = find(judge_machine(m), "/dev/gdrhook: not present");
    CHECK_THAT(built.advice,
               Catch::Contains("sudo dkms install gdrhook/0.1.0+git506.259577a -k 6.1.0-99-amd64"));
    CHECK_THAT(built.advice, Catch::Contains("sudo modprobe gdrhook"));
    CHECK_THAT(built.advice, !Catch::Contains("linux-headers"));
}

TEST_CASE("doctor's findings on a process hold none of the process's control bytes", "[doctor]")
{
    // What the process chose (its mapped paths, its GDRHOOK_* values) is
    // escaped where the finding is made, whatever prints it later.
    MachineFacts m = healthy_machine();
    m.query.pid = 4242;
    ProcessFacts process;
    process.pid = 4242;
    process.found = true;
    process.gdrhook = "/tmp/\x1b[2J/libgdrhook.so";
    process.rejected = {"GDRHOOK_PIN='\x1b]8;;http://x\x07click\x1b]8;;\x07\r\x7f' is not a mode",
                        "second line\nroot# "};
    m.process = process;
    int seen = 0;
    for (const Finding &f : judge_machine(m)) {
        if (f.what.rfind("process 4242", 0) != 0)
            continue;
        ++seen;
        for (const unsigned char c : f.what + f.advice)
            CHECK((c >= 0x20 && c != 0x7f));
    }
    CHECK(seen >= 3); // the libraries' line and both rejected values
}

TEST_CASE("BAR1 over 90% used is a note with advice, not a problem", "[doctor]")
{
    MachineFacts m = healthy_machine();
    NvmlFacts::Bar1 bar1;
    bar1.known = true;
    bar1.total = 1000;
    bar1.used = 901;
    m.nvml.bar1 = {bar1};
    const std::vector<Finding> findings = judge_machine(m);
    const Finding f = find(findings, "BAR1 is over 90% used");
    CHECK(f.verdict == Finding::Verdict::note);
    CHECK_THAT(f.advice, Catch::Contains("GDRHOOK_CACHE_MAX_BYTES"));
    CHECK(problems(findings) == 0);
}
