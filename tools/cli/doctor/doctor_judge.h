// SPDX-License-Identifier: MIT OR GPL-2.0-only
// What the machine's facts (machine_facts.h) mean: pure functions from
// facts to verdicts and advice, tested on facts made by hand.
#pragma once

#include "doctor/machine_facts.h"

#include <string>
#include <vector>

namespace gdrhook::cli {

// The backends this machine allows, whatever GDRHOOK_BACKEND says: each
// whose row (cache/backends/backend_kinds.h) finds it usable on every GPU
// or, with none to ask, on a GPU that says nothing.
struct AllowedBackends {
    bool usable[backend_kind_count] = {};
    bool operator[](BackendKind kind) const { return usable[static_cast<size_t>(kind)]; }
};
AllowedBackends allowed_backends(const GdrhookDeviceFacts &device, const CudaFacts &cuda);
// The features bitmask in words ("nv-p2p, dma-buf").
std::string describe_features(uint32_t features);
// "integrated", "discrete" or "kind unknown" for CudaFacts::Gpu::integrated.
std::string gpu_kind(int integrated);

// What the shim would pick for `wanted` on this GPU: the shim's rule
// (cache/backends/backend_rule.h) over the doctor's facts, the GPU's
// attributes read as the shim reads them (unknown is no).
BackendDecision judge_backend(Backend wanted, const GdrhookDeviceFacts &device,
                              const CudaFacts::Gpu &gpu);

// Which one UCX's CUDA memory caches rely on to hear of frees in that
// process, in words; `problem` when nothing tells them.
struct UcxReliance {
    bool applies = false; // gdrhook and UCX both loaded
    bool problem = false;
    std::string what;
    std::string advice;
};
UcxReliance judge_ucx(const ProcessFacts &process);

// One line of the doctor's report: a verdict on one fact, and what to do
// about it (empty: nothing).
struct Finding {
    enum class Verdict { ok, note, problem };
    Verdict verdict = Verdict::note;
    std::string what;
    std::string advice;
};

// Every finding, in the order the report prints them.
std::vector<Finding> judge_machine(const MachineFacts &facts);

} // namespace gdrhook::cli
