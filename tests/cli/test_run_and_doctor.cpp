// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/config.h"
#include "doctor/doctor.h"
#include "event_lines.h"
#include "install/library_locator.h"
#include "read/events_pattern.h"
#include "run/run_command.h"
#include "test_support.h"

#include "kmod/include/uapi/gdrhook_ioctl.h"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

using namespace gdrhook::cli;
using namespace gdrhook::cli::test;
using gdrhook::Backend;
using gdrhook::BackendKind;

TEST_CASE("run puts the shim first in LD_PRELOAD and sets only the options given", "[run]")
{
    RunOptions options;
    options.settings["GDRHOOK_PIN"] = "alloc";
    options.settings["GDRHOOK_VERIFY"] = "1";
    auto env = run_environment(options, "/x/libgdrhook.so", "/tmp/e.%p.jsonl",
                               {"PATH=/bin", "LD_PRELOAD=/y/libother.so", "GDRHOOK_BACKEND=kmod"});
    auto has = [&](const std::string &entry) {
        return std::find(env.begin(), env.end(), entry) != env.end();
    };
    CHECK(has("LD_PRELOAD=/x/libgdrhook.so:/y/libother.so"));
    CHECK(has("GDRHOOK_EVENTS=/tmp/e.%p.jsonl"));
    CHECK(has("GDRHOOK_PIN=alloc"));
    CHECK(has("GDRHOOK_VERIFY=1"));
    CHECK(has("GDRHOOK_BACKEND=kmod")); // not given: the environment's stays
    CHECK(has("PATH=/bin"));
    CHECK(std::none_of(env.begin(), env.end(),
                       [](const std::string &e) { return e.rfind("GDRHOOK_LOG_LEVEL=", 0) == 0; }));

    auto fresh = run_environment(options, "/x/libgdrhook.so", "e", {});
    CHECK(std::find(fresh.begin(), fresh.end(), "LD_PRELOAD=/x/libgdrhook.so") != fresh.end());
}

namespace {

// What the built `gdrhook run OPTIONS -- sh -c 'echo $VARIABLE'` prints
// on stdout, and its exit status.
int run_tool(const std::string &options, const std::string &variable, std::string &said)
{
    const char *tool = std::getenv("GDRHOOK");
    REQUIRE(tool != nullptr);
    const char *wrapper = std::getenv("GDRHOOKTEST_EXEC_WRAPPER");
    const std::string command = std::string(wrapper ? wrapper : "") + " '" + tool + "' run " +
                                options + " --no-summary -- sh -c 'echo \"$" + variable +
                                "\"' 2>/dev/null";
    FILE *pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    said.clear();
    char buffer[256];
    while (size_t got = fread(buffer, 1, sizeof buffer, pipe))
        said.append(buffer, got);
    const int status = pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

TEST_CASE("run --backend and --pin take every value their variables take (issue 40)", "[run]")
{
    // Walked from the settings table, so a value added there is tried here.
    for (const char *variable : {"GDRHOOK_BACKEND", "GDRHOOK_PIN", "GDRHOOK_LOG_LEVEL"}) {
        const gdrhook::ConfigVariable *setting = gdrhook::find_config_variable(variable);
        REQUIRE(setting != nullptr);
        REQUIRE(setting->choices.count > 0);
        std::string option = std::string("--") + (variable + 8);
        std::transform(option.begin(), option.end(), option.begin(),
                       [](char c) { return c == '_' ? '-' : static_cast<char>(std::tolower(c)); });
        for (const gdrhook::ChoiceWord &choice : setting->choices) {
            const char *value = choice.word;
            std::string said;
            const int status = run_tool(option + " " + value, variable, said);
            INFO(option << " " << value << ": " << said);
            CHECK(status == 0);
            CHECK(said == std::string(value) + "\n");
        }
        std::string said;
        CHECK(run_tool(option + " no-such-value", variable, said) == 2);
        CHECK(said.empty());
    }
}

TEST_CASE("the events pattern finds one file per process", "[run]")
{
    std::string dir = "/tmp/gdrhook-cli-pattern-" + std::to_string(getpid());
    REQUIRE(mkdir(dir.c_str(), 0700) == 0);
    for (const char *name : {"/ev.123.jsonl", "/ev.45.jsonl", "/ev.x.jsonl", "/ev.%.jsonl"})
        std::ofstream(dir + name) << "";
    auto files = expand_events_pattern(dir + "/ev.%p.jsonl");
    CHECK(files == std::vector<std::string>{dir + "/ev.123.jsonl", dir + "/ev.45.jsonl"});
    CHECK(expand_events_pattern(dir + "/ev.%%.jsonl") ==
          std::vector<std::string>{dir + "/ev.%.jsonl"});
    for (const char *name : {"/ev.123.jsonl", "/ev.45.jsonl", "/ev.x.jsonl", "/ev.%.jsonl"})
        unlink((dir + name).c_str());
    rmdir(dir.c_str());
}

TEST_CASE("the events pattern's %h is this host and %r any rank", "[run]")
{
    char tmpl[] = "/tmp/gdrhook-run-test-XXXXXX";
    std::string dir = mkdtemp(tmpl);
    const char *names[] = {"/nodeA-rank0.12.jsonl", "/nodeA-rank13.7.jsonl", "/nodeA-rankx.9.jsonl",
                           "/nodeB-rank1.12.jsonl", "/node*-rank2.5.jsonl"};
    for (const char *name : names)
        std::ofstream(dir + name) << "";
    CHECK(expand_events_pattern(dir + "/%h-rank%r.%p.jsonl", "nodeA") ==
          std::vector<std::string>{dir + "/nodeA-rank0.12.jsonl", dir + "/nodeA-rank13.7.jsonl",
                                   dir + "/nodeA-rankx.9.jsonl"});
    // A host name is matched as it is, not as a pattern.
    CHECK(expand_events_pattern(dir + "/%h-rank%r.%p.jsonl", "node*") ==
          std::vector<std::string>{dir + "/node*-rank2.5.jsonl"});
    CHECK(gdrhook::short_host_name().find('.') == std::string::npos);
    for (const char *name : names)
        unlink((dir + name).c_str());
    rmdir(dir.c_str());
}

TEST_CASE("run and doctor look for the shim --library names, else GDRHOOK_LIBRARY's", "[run]")
{
    const char *before = std::getenv("GDRHOOK_LIBRARY");
    const std::string kept = before ? before : "";
    setenv("GDRHOOK_LIBRARY", "/from/environment/libgdrhook.so", 1);
    std::vector<std::string> tried;
    CHECK(find_shim("", tried).empty());
    CHECK(tried == std::vector<std::string>{"/from/environment/libgdrhook.so"});
    CHECK(find_shim("/from/option/libgdrhook.so", tried).empty());
    CHECK(tried == std::vector<std::string>{"/from/option/libgdrhook.so"});
    // The doctor reports the shim `gdrhook run` would load.
    const ShimFacts shim = probe_shim();
    CHECK(shim.tried == std::vector<std::string>{"/from/environment/libgdrhook.so"});
    unsetenv("GDRHOOK_LIBRARY");
    CHECK(named_library("").empty());
    if (before)
        setenv("GDRHOOK_LIBRARY", kept.c_str(), 1);
}

TEST_CASE("the shim is looked for in the build tree, then the install tree", "[run]")
{
    auto candidates = library_candidates("/opt/gdrhook/bin", "");
    REQUIRE(candidates.size() >= 3);
    CHECK(candidates[0] == "/opt/gdrhook/bin/../hook/libgdrhook.so");
#if defined(__x86_64__)
    const char *multiarch = "/opt/gdrhook/bin/../lib/x86_64-linux-gnu/libgdrhook.so";
#else
    const char *multiarch = "/opt/gdrhook/bin/../lib/aarch64-linux-gnu/libgdrhook.so";
#endif
    CHECK(std::find(candidates.begin(), candidates.end(), multiarch) != candidates.end());
    CHECK(library_candidates("/opt/gdrhook/bin", "/my/libgdrhook.so") ==
          std::vector<std::string>{"/my/libgdrhook.so"});
    std::vector<std::string> tried;
    CHECK(find_library("/nonexistent/bin", "", tried).empty());
    CHECK(tried.size() == candidates.size());
}

namespace {

// A module that opened, answered and speaks this build's ABI.
GdrhookDeviceFacts module_answering(uint32_t features)
{
    GdrhookDeviceFacts device;
    device.path = "/dev/gdrhook";
    device.present = true;
    device.module.open_errno = 0;
    device.module.answers_version = device.module.abi_fits = true;
    device.module.features = features;
    device.module.nvp2p = features & GDRHOOK_FEATURE_NVP2P;
    device.module.host_pages = features & GDRHOOK_FEATURE_HOST_PAGES;
    return device;
}

BackendKind auto_pick(const GdrhookDeviceFacts &device, const CudaFacts::Gpu &gpu)
{
    return judge_backend(Backend::auto_select, device, gpu).kind;
}

} // namespace

TEST_CASE("the doctor's auto picks kmod only where the module has an nv-p2p provider", "[doctor]")
{
    GdrhookDeviceFacts absent;
    absent.path = "/dev/gdrhook";
    CudaFacts::Gpu gpu;
    gpu.dma_buf = 1;
    CHECK(auto_pick(absent, gpu) == BackendKind::dmabuf);
    CHECK(judge_backend(Backend::auto_select, absent, gpu).reason.find("absent") !=
          std::string::npos);
    gpu.dma_buf = 0;
    CHECK(auto_pick(absent, gpu) == BackendKind::none);
    gpu.dma_buf = -1; // unknown: the shim reads it as no
    CHECK(auto_pick(absent, gpu) == BackendKind::none);

    // The module answers with its ABI but found no nvidia_p2p_*: the shim
    // cannot pin through it, and neither does the doctor say it would.
    CHECK(auto_pick(module_answering(0), gpu) == BackendKind::none);
    CHECK(auto_pick(module_answering(GDRHOOK_FEATURE_NVP2P), gpu) == BackendKind::kmod);
    CHECK_FALSE(allowed_backends(module_answering(0), {})[BackendKind::kmod]);
}

TEST_CASE("auto picks pin_user_pages on an integrated GPU where the module pins host pages",
          "[doctor]")
{
    GdrhookDeviceFacts device =
        module_answering(GDRHOOK_FEATURE_NVP2P | GDRHOOK_FEATURE_HOST_PAGES);
    CudaFacts cuda;
    cuda.initialised = true;
    CudaFacts::Gpu gpu;
    gpu.dma_buf = 1;
    gpu.integrated = 0;
    cuda.gpus = {gpu};

    CHECK(auto_pick(device, cuda.gpus[0]) == BackendKind::kmod);
    cuda.gpus[0].integrated = 1;
    CHECK(auto_pick(device, cuda.gpus[0]) == BackendKind::pin_user_pages);
    const AllowedBackends allowed = allowed_backends(device, cuda);
    CHECK(allowed[BackendKind::kmod]);
    CHECK(allowed[BackendKind::pin_user_pages]);
    CHECK(allowed[BackendKind::dmabuf]);
    // A module older than ABI 1.1 (or without MMU notifiers) pins no host pages.
    device = module_answering(GDRHOOK_FEATURE_NVP2P);
    CHECK_FALSE(allowed_backends(device, cuda)[BackendKind::pin_user_pages]);
    CHECK(auto_pick(device, cuda.gpus[0]) == BackendKind::kmod);
}

TEST_CASE("the doctor names the module's nv-p2p flavour", "[doctor]")
{
    CHECK(describe_features(GDRHOOK_FEATURE_NVP2P | GDRHOOK_FEATURE_NVP2P_TEGRA) ==
          "nv-p2p, nv-p2p flavour tegra");
    CHECK(describe_features(GDRHOOK_FEATURE_NVP2P | GDRHOOK_FEATURE_NVP2P_PERSISTENT) ==
          "nv-p2p, nv-p2p persistent");
}

TEST_CASE("the doctor says a Tegra by L4T's release file or the device tree", "[doctor]")
{
    char tmpl[] = "/tmp/gdrhook-platform-test-XXXXXX";
    const std::string root = mkdtemp(tmpl);
    CHECK_FALSE(probe_platform(root).tegra);
    CHECK_FALSE(probe_platform(root).architecture.empty());
    std::filesystem::create_directories(root + "/sys/firmware/devicetree/base");
    std::ofstream(root + "/sys/firmware/devicetree/base/compatible", std::ios::binary)
        << std::string("nvidia,p3737-0000\0nvidia,tegra234\0", 34);
    CHECK(probe_platform(root).tegra);
    CHECK(probe_platform(root).tegra_evidence == "/sys/firmware/devicetree/base/compatible");
    std::filesystem::create_directories(root + "/etc");
    std::ofstream(root + "/etc/nv_tegra_release") << "# R36 (release), REVISION: 4.0\n";
    CHECK(probe_platform(root).tegra_evidence == "/etc/nv_tegra_release");
    std::filesystem::remove_all(root);
}

TEST_CASE("the doctor finds the running kernel's installed module as modprobe does", "[doctor]")
{
    struct utsname names {};
    REQUIRE(uname(&names) == 0);
    char tmpl[] = "/tmp/gdrhook-modules-test-XXXXXX";
    const std::string root = mkdtemp(tmpl);
    const std::string folder = root + "/lib/modules/" + names.release;
    std::filesystem::create_directories(folder);
    CHECK(probe_installed_module(root).empty()); // no modules.dep
    std::ofstream(folder + "/modules.dep")
        << "kernel/drivers/a/a.ko.xz:\n"
           "kernel/drivers/gdrhook_other.ko:\n"
           "updates/dkms/gdrhook.ko.xz: kernel/drivers/a/a.ko.xz\n";
    CHECK(probe_installed_module(root) ==
          std::string("/lib/modules/") + names.release + "/updates/dkms/gdrhook.ko.xz");
    std::ofstream(folder + "/modules.dep") << "kernel/drivers/gdrhook_other.ko:\n";
    CHECK(probe_installed_module(root).empty());
    std::filesystem::remove_all(root);
}

TEST_CASE("the doctor reads DKMS's state of gdrhook for the running kernel", "[doctor]")
{
    struct utsname names {};
    REQUIRE(uname(&names) == 0);
    char tmpl[] = "/tmp/gdrhook-dkms-test-XXXXXX";
    const std::string root = mkdtemp(tmpl);
    CHECK(probe_dkms(root).versions.empty()); // no DKMS at all
    CHECK(probe_dkms(root).running_release == names.release);

    // DKMS's tree (dkms 3): a version folder with a `source` link and one
    // folder per kernel it built for; the running kernel has no headers.
    const std::string module = root + "/var/lib/dkms/gdrhook";
    std::filesystem::create_directories(module +
                                        "/0.1.0+git506.259577a/6.1.0-56-amd64/x86_64/module");
    std::filesystem::create_directory_symlink("/usr/src/gdrhook-0.1.0+git506.259577a",
                                              module + "/0.1.0+git506.259577a/source");
    std::filesystem::create_directories(module + "/0.1.0+git506.259577a/build");
    std::filesystem::create_directories(root + "/var/lib/dkms/other/1.0/" + names.release);
    DkmsFacts dkms = probe_dkms(root);
    CHECK(dkms.versions == std::vector<std::string>{"0.1.0+git506.259577a"});
    CHECK(dkms.built_kernels == std::vector<std::string>{"6.1.0-56-amd64"});
    CHECK_FALSE(dkms.built_for_running);
    CHECK_FALSE(dkms.headers_for_running);

    std::filesystem::create_directories(root + "/lib/modules/" + names.release + "/build");
    std::filesystem::create_directories(module + "/0.1.0+git506.259577a/" + names.release +
                                        "/x86_64/module");
    dkms = probe_dkms(root);
    CHECK(dkms.headers_for_running);
    CHECK(dkms.built_for_running);
    std::filesystem::remove_all(root);
}

TEST_CASE("the doctor reports a missing driver without crashing", "[doctor]")
{
    CudaFacts cuda = probe_cuda("/nonexistent/libcuda.so.1");
    CHECK_FALSE(cuda.loaded);
    CHECK_FALSE(cuda.error.empty());
    NvmlFacts nvml = probe_nvml("/nonexistent/libnvidia-ml.so.1", {});
    CHECK_FALSE(nvml.loaded);
    GdrhookDeviceFacts device = probe_gdrhook_device("/nonexistent/gdrhook");
    CHECK_FALSE(device.present);
    GdrhookDeviceFacts not_ours = probe_gdrhook_device("/dev/null");
    CHECK(not_ours.present);
    CHECK_FALSE(not_ours.module.abi_fits);
    CHECK(not_ours.error.find("GET_VERSION") != std::string::npos);
}

namespace {

// A process that sleeps with the shim and UCX's libucm preloaded and the
// given settings; killed and reaped by the destructor.
struct SleepingProcess {
    pid_t pid = -1;
    explicit SleepingProcess(std::map<std::string, std::string> settings)
    {
        settings["LD_PRELOAD"] = build_path("GDRHOOKTEST_SHIM") + ":libucm.so.0";
        pid = fork();
        if (pid == 0)
            exec_program({build_path("GDRHOOKTEST_SLEEPER"), "30"}, settings);
    }
    ~SleepingProcess()
    {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
    }
};

// Waits until the process has both libraries mapped (its exec done).
ProcessFacts loaded(int pid)
{
    ProcessFacts facts;
    for (int i = 0; i < 200; ++i) {
        facts = probe_process(pid);
        if (!facts.gdrhook.empty() && !facts.ucm.empty())
            break;
        usleep(10000);
    }
    return facts;
}

} // namespace

TEST_CASE("the doctor says which one UCX's caches rely on in a running process", "[doctor]")
{
    {
        SleepingProcess process(std::map<std::string, std::string>{});
        ProcessFacts facts = loaded(process.pid);
        REQUIRE_FALSE(facts.gdrhook.empty());
        REQUIRE_FALSE(facts.ucm.empty());
        UcxReliance ucx = judge_ucx(facts);
        CHECK(ucx.applies);
        CHECK_FALSE(ucx.problem);
        CHECK(ucx.what.find("rely on gdrhook (GDRHOOK_UCX=auto)") != std::string::npos);
    }
    {
        SleepingProcess process(std::map<std::string, std::string>{{"GDRHOOK_UCX", "off"}});
        ProcessFacts facts = loaded(process.pid);
        CHECK(facts.settings.ucx == gdrhook::UcxBridgeMode::off);
        UcxReliance ucx = judge_ucx(facts);
        // Debian's UCX has no CUDA module: nothing tells its caches of frees.
        CHECK(ucx.problem == facts.ucm_cuda.empty());
        // And through the command line: a problem is exit status 1 (as is
        // the missing driver given here, so the line must be there too).
        RunResult run =
            run_program({build_path("GDRHOOK"), "doctor", "--libcuda", "/nonexistent/libcuda.so.1",
                         "--pid", std::to_string(process.pid)},
                        {});
        INFO(run.output);
        CHECK(run.exit_status == 1);
        CHECK(run.output.find("process " + std::to_string(process.pid) + ": gdrhook and UCX") !=
              std::string::npos);
    }
    {
        // Read as the shim reads it: "yes" disables it, a bad value is
        // rejected and the default kept.
        // A misspelled variable is said as the shim says it (issue 40).
        SleepingProcess process(std::map<std::string, std::string>{
            {"GDRHOOK_DISABLE", "yes"}, {"GDRHOOK_UCX", "bogus"}, {"GDRHOOK_UXC", "off"}});
        ProcessFacts facts = loaded(process.pid);
        CHECK(facts.settings.disabled);
        CHECK(facts.settings.ucx == gdrhook::UcxBridgeMode::auto_detect);
        REQUIRE(facts.rejected.size() == 2);
        CHECK(facts.rejected[1].find("GDRHOOK_UXC is not a gdrhook variable and is ignored (did "
                                     "you mean GDRHOOK_UCX?") != std::string::npos);
        CHECK(judge_ucx(facts).problem == facts.ucm_cuda.empty());
    }
    ProcessFacts gone = probe_process(999999999);
    CHECK_FALSE(gone.found);
    CHECK(judge_ucx(gone).applies == false);
    ProcessFacts facts;
    facts.gdrhook = "/x/libgdrhook.so";
    facts.ucm = "/x/libucm.so.0";
    facts.ucm_cuda = "/x/ucx/libucm_cuda.so.0";
    facts.settings.ucx = gdrhook::UcxBridgeMode::off;
    CHECK_FALSE(judge_ucx(facts).problem); // UCX's own hooks
    CHECK(judge_ucx(facts).what.find("rely on UCX's own hooks") != std::string::npos);
    facts.ucx_cuda_hook_mode = "none";
    CHECK(judge_ucx(facts).problem);
}

TEST_CASE("doctor --pid escapes what the process chose before root's terminal sees it (issue 39)",
          "[doctor]")
{
    // Its environment is the process's own: a value with a title-setting
    // escape, a bell and a carriage return, read back in the line that
    // rejects it.
    SleepingProcess process(
        std::map<std::string, std::string>{{"GDRHOOK_UCX", "\x1b]0;x\x07\rfine\x9b"}});
    REQUIRE_FALSE(loaded(process.pid).gdrhook.empty());
    RunResult run = run_program({build_path("GDRHOOK"), "doctor", "--libcuda",
                                 "/nonexistent/libcuda.so.1", "--pid", std::to_string(process.pid)},
                                {});
    INFO(run.output);
    CHECK(run.output.find("GDRHOOK_UCX='\\x1b]0;x\\x07\\x0dfine\\x9b'") != std::string::npos);
    for (const char c : run.output) {
        const auto byte = static_cast<unsigned char>(c);
        CHECK(((byte >= 0x20 && byte < 0x7f) || byte == '\n'));
    }
}

TEST_CASE("doctor --settings says a GDRHOOK_ variable nothing reads, as the shim does (issue 40)",
          "[doctor]")
{
    RunResult run = run_program({build_path("GDRHOOK"), "doctor", "--settings"},
                                {{"GDRHOOK_EVENT", "/tmp/x.jsonl"}});
    INFO(run.output);
    CHECK(run.exit_status == 1); // a finding
    CHECK(run.output.find("gdrhook: GDRHOOK_EVENT is not a gdrhook variable and is ignored (did "
                          "you mean GDRHOOK_EVENTS?") != std::string::npos);
}
