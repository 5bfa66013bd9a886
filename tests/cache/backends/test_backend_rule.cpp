// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The backend rule (cache/backends/backend_rule.h) over every combination
// of the facts it reads: what is wanted, what /dev/gdrhook said, what the
// GPU says. For each, the decision; and that the shim's selection
// (select_backend.h) and the doctor's judgement (tools/cli/doctor) give
// the same answer from the same facts. Then the probe both of them ask.
#include "cache/backends/backend_rule.h"
#include "cache/backends/kmod_backend.h"
#include "cache/backends/module_probe.h"
#include "cache/backends/select_backend.h"
#include "doctor/doctor.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <vector>

using namespace gdrhook;

namespace {

const std::string kmod_path = "/dev/gdrhook";

// What /dev/gdrhook can have said, with the words its reason must carry.
struct ModuleCase {
    const char *name;
    ModuleFacts facts;
    const char *why_not; // nullptr: it answers with our ABI
};

ModuleFacts answering(bool nvp2p, bool host_pages)
{
    ModuleFacts m;
    m.open_errno = 0;
    m.answers_version = m.abi_fits = true;
    m.abi_major = 1;
    m.nvp2p = nvp2p;
    m.host_pages = host_pages;
    return m;
}

std::vector<ModuleCase> module_cases()
{
    ModuleFacts absent; // ENOENT
    ModuleFacts denied;
    denied.open_errno = EACCES;
    ModuleFacts mute;
    mute.open_errno = 0;
    mute.version_errno = ENOTTY;
    ModuleFacts other_abi = answering(true, true);
    other_abi.abi_fits = false;
    other_abi.abi_major = 99;
    return {
        {"absent", absent, "is absent"},
        {"EACCES", denied, "cannot open"},
        {"no GET_VERSION", mute, "does not answer GET_VERSION"},
        {"ABI mismatch", other_abi, "another ABI major version"},
        {"features 0", answering(false, false), nullptr},
        {"features nv-p2p", answering(true, false), nullptr},
        {"features host pages", answering(false, true), nullptr},
        {"features both", answering(true, true), nullptr},
    };
}

const Backend wanted_values[] = {Backend::auto_select, Backend::kmod, Backend::dmabuf,
                                 Backend::pin_user_pages, Backend::none};

struct Expected {
    BackendKind kind;
    bool request_failed;
};

// The table, one line per value of GDRHOOK_BACKEND.
Expected expected(Backend wanted, const ModuleCase &m, const GpuFacts &gpu)
{
    const bool answers = m.why_not == nullptr;
    const bool gpu_memory = answers && m.facts.nvp2p;
    const bool host_pages = answers && m.facts.host_pages;
    switch (wanted) {
    case Backend::none: return {BackendKind::none, false};
    case Backend::dmabuf: return {BackendKind::dmabuf, false};
    case Backend::kmod:
        return gpu_memory ? Expected{BackendKind::kmod, false} : Expected{BackendKind::none, true};
    case Backend::pin_user_pages:
        return host_pages ? Expected{BackendKind::pin_user_pages, false}
                          : Expected{BackendKind::none, true};
    case Backend::auto_select:
        if (gpu.integrated && host_pages)
            return {BackendKind::pin_user_pages, false};
        if (gpu_memory)
            return {BackendKind::kmod, false};
        return {gpu.dma_buf ? BackendKind::dmabuf : BackendKind::none, false};
    }
    return {BackendKind::none, false};
}

template <typename Check> void for_every_combination(Check check)
{
    for (Backend wanted : wanted_values)
        for (const ModuleCase &m : module_cases())
            for (bool integrated : {false, true})
                for (bool dma_buf : {false, true})
                    check(wanted, m, GpuFacts{integrated, dma_buf});
}

std::string describe(Backend wanted, const ModuleCase &m, const GpuFacts &gpu)
{
    return std::string("GDRHOOK_BACKEND=") + to_string(wanted) + ", module " + m.name +
           ", integrated " + std::to_string(gpu.integrated) + ", dma-buf " +
           std::to_string(gpu.dma_buf);
}

} // namespace

TEST_CASE("the backend rule decides every combination of facts as the table says", "[rule]")
{
    int combinations = 0;
    for_every_combination([&](Backend wanted, const ModuleCase &m, const GpuFacts &gpu) {
        ++combinations;
        INFO(describe(wanted, m, gpu));
        const BackendDecision d = decide_backend(wanted, m.facts, gpu, kmod_path);
        const Expected want = expected(wanted, m, gpu);
        CHECK(d.kind == want.kind);
        CHECK(d.request_failed.ok() == !want.request_failed);
        CHECK_FALSE(d.reason.empty());
        // Where the module was asked and did not answer, the reason says why.
        const bool module_asked =
            wanted == Backend::kmod || wanted == Backend::pin_user_pages ||
            (wanted == Backend::auto_select && want.kind != BackendKind::kmod &&
             want.kind != BackendKind::pin_user_pages);
        if (m.why_not && module_asked)
            CHECK(d.reason.find(m.why_not) != std::string::npos);
        if (want.request_failed)
            CHECK(d.reason.find("nothing is pinned") != std::string::npos);
    });
    CHECK(combinations == 5 * 8 * 2 * 2);
}

TEST_CASE("for every combination of facts the doctor's answer is the shim's choice", "[rule]")
{
    for_every_combination([&](Backend wanted, const ModuleCase &m, const GpuFacts &gpu) {
        INFO(describe(wanted, m, gpu));
        // The shim's selection, handed the facts instead of gathering them
        // (no file behind them: a backend needing the module is not built).
        BackendChoice shim;
        Status status = select_backend_from(wanted, ModuleProbe{m.facts, {}}, gpu, DriverApi{},
                                            kmod_path, shim);
        // The doctor's, from the same facts as it gathers them.
        cli::GdrhookDeviceFacts device;
        device.path = kmod_path;
        device.present = m.facts.open_errno != ENOENT;
        device.module = m.facts;
        cli::CudaFacts::Gpu doctor_gpu;
        doctor_gpu.integrated = gpu.integrated;
        doctor_gpu.dma_buf = gpu.dma_buf;
        const BackendDecision doctor = cli::judge_backend(wanted, device, doctor_gpu);

        CHECK(doctor.kind == shim.decision.kind);
        CHECK(doctor.reason == shim.decision.reason);
        CHECK(doctor.request_failed.code == shim.decision.request_failed.code);
        if (shim.decision.kind == BackendKind::none || shim.decision.kind == BackendKind::dmabuf) {
            CHECK(shim.backend->kind() == shim.decision.kind);
            CHECK(status.code == shim.decision.request_failed.code);
        } else { // the facts say the module answers, but no file was handed in
            CHECK(shim.backend->kind() == BackendKind::none);
            CHECK_FALSE(status.ok());
        }
    });
}

TEST_CASE("for every combination of facts the doctor allows what the rule finds usable", "[rule]")
{
    for_every_combination([&](Backend wanted, const ModuleCase &m, const GpuFacts &gpu) {
        INFO(describe(wanted, m, gpu));
        cli::GdrhookDeviceFacts device;
        device.module = m.facts;
        cli::CudaFacts cuda;
        cuda.initialised = true;
        cuda.gpus.resize(1);
        cuda.gpus[0].integrated = gpu.integrated;
        cuda.gpus[0].dma_buf = gpu.dma_buf;
        const cli::AllowedBackends allowed = cli::allowed_backends(device, cuda);
        // A backend asked for by name that the rule refuses is one the
        // doctor does not allow, and the other way round.
        CHECK(allowed[BackendKind::kmod] ==
              (decide_backend(Backend::kmod, m.facts, gpu, kmod_path).kind == BackendKind::kmod));
        CHECK(allowed[BackendKind::pin_user_pages] ==
              (decide_backend(Backend::pin_user_pages, m.facts, gpu, kmod_path).kind ==
               BackendKind::pin_user_pages));
        CHECK(allowed[BackendKind::kmod] == backend_usable(BackendKind::kmod, m.facts, gpu));
        CHECK(allowed[BackendKind::pin_user_pages] ==
              backend_usable(BackendKind::pin_user_pages, m.facts, gpu));
        CHECK(allowed[BackendKind::dmabuf] == backend_usable(BackendKind::dmabuf, m.facts, gpu));
        CHECK(allowed[BackendKind::dmabuf] == gpu.dma_buf);
        // What `wanted` gives is usable, or refused as asked for by name.
        const BackendDecision d = decide_backend(wanted, m.facts, gpu, kmod_path);
        if (d.request_failed.ok() && d.kind != BackendKind::dmabuf)
            CHECK(backend_usable(d.kind, m.facts, gpu));
    });
}

TEST_CASE("a backend attaches to the module only where its row finds it usable", "[rule]")
{
    for (const ModuleCase &m : module_cases()) {
        for (BackendKind kind : {BackendKind::kmod, BackendKind::pin_user_pages}) {
            INFO(m.name << ", " << to_string(kind));
            ModuleProbe probe;
            probe.facts = m.facts;
            // Any open file stands for /dev/gdrhook: attaching asks it nothing.
            probe.device = UniqueFd(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
            REQUIRE(probe.device.valid());
            KmodBackend backend(DriverApi{}, kind);
            CHECK(backend.attach(std::move(probe)).ok() == backend_usable(kind, m.facts, {}));
        }
    }
}

TEST_CASE("the probe says what /dev/gdrhook's path holds, and the shim says it", "[rule]")
{
    const ModuleProbe absent = probe_module("/nonexistent/gdrhook");
    CHECK(absent.facts.open_errno == ENOENT);
    CHECK_FALSE(absent.device.valid());

    // A path that is there but cannot be opened read-write is not absent.
    const ModuleProbe directory = probe_module("/");
    CHECK(directory.facts.open_errno == EISDIR);
    BackendChoice choice;
    Status status = select_backend(Backend::kmod, DriverApi{}, 0, "/", choice);
    CHECK(status.code == StatusCode::io_error);
    CHECK(status.detail == EISDIR);
    CHECK(choice.reason.find("cannot open /dev/gdrhook") != std::string::npos);

    // A file that opens but is not the module's: no GET_VERSION.
    const ModuleProbe not_ours = probe_module("/dev/null");
    CHECK(not_ours.facts.open_errno == 0);
    CHECK_FALSE(not_ours.facts.answers_version);
    // qemu-user answers an ioctl it does not know with ENOSYS, where the
    // kernel says ENOTTY (the cli suite's e2e.sh meets the same).
    const char *emulator = std::getenv("GDRHOOKTEST_EXEC_WRAPPER");
    if (emulator && *emulator)
        CHECK((not_ours.facts.version_errno == ENOTTY || not_ours.facts.version_errno == ENOSYS));
    else
        CHECK(not_ours.facts.version_errno == ENOTTY);
    status = select_backend(Backend::pin_user_pages, DriverApi{}, 0, "/dev/null", choice);
    CHECK(status.code == StatusCode::no_device);
    CHECK(choice.backend->kind() == BackendKind::none);
    CHECK(choice.reason.find("does not answer GET_VERSION") != std::string::npos);
}
