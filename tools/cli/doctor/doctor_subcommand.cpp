// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "doctor/doctor_subcommand.h"

#include "doctor/doctor.h"

#include <iostream>
#include <memory>

namespace gdrhook::cli {

Command add_doctor(CLI::App &app)
{
    auto options = std::make_shared<DoctorOptions>();
    CLI::App *doctor = app.add_subcommand(
        "doctor", "check the machine: driver, GPUs and their DMA-BUF / GPUDirect RDMA support, "
                  "BAR1, /dev/gdrhook, and which backend auto would pick");
    doctor->add_option("--libcuda", options->libcuda, "the CUDA driver library to load")
        ->capture_default_str();
    doctor->add_option("--libnvml", options->libnvml, "the NVML library to load")
        ->capture_default_str();
    doctor->add_option("--device", options->device, "the gdrhook device node")
        ->capture_default_str();
    doctor
        ->add_option("--pid", options->pid,
                     "also look at this running process: whether gdrhook and UCX are both "
                     "loaded, and which one UCX's CUDA memory caches rely on")
        ->check(CLI::Range(1, 4194304)); // Linux's largest pid_max
    doctor->add_flag("--settings", options->settings,
                     "only list the GDRHOOK_* variables: what each accepts, its default, and its "
                     "value in this environment (a Markdown table)");
    doctor->footer("Exit status: 0 no problems; 1 problems found (each with advice).");
    return {doctor, [options](const CommandLine &) { return run_doctor(*options, std::cout); }};
}

} // namespace gdrhook::cli
