// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/ucx/ucx_bridge.h"

#include "cache/base/diagnostics.h"
#include "cache/ucx/ucm_library.h"

#include <atomic>
#include <mutex>

namespace gdrhook {
namespace {

UcmFunctions ucm; // written once, before `bridging` says so
UcxBridgeMode bridge_mode = UcxBridgeMode::off;
FreeSubscription free_subscription = -1;
AllocSubscription alloc_subscription = -1;
std::atomic<bool> bridging{false};
std::mutex looking;

// Set while this thread is inside ucm_event_dispatch: UCX's handlers may
// free CUDA memory (a deregistration), and that free must not dispatch
// again from inside the first.
GDRHOOK_THREAD_LOCAL bool inside_ucm_dispatch = false;

void start_bridging(const UcmFunctions &found)
{
    ucm = found;
    // Before the flag: a UCX cache created from now on installs no CUDA
    // hooks of its own for these events (one made earlier keeps its hooks
    // and hears of a free twice, which changes nothing).
    ucm.set_external_event(ucm::event_mem_type_alloc | ucm::event_mem_type_free);
    bridging.store(true, std::memory_order_release);
    start_listening(free_subscription);
    start_listening_to_allocations(alloc_subscription);
    diagnostics().info("UCX bridge on: libucm's CUDA memory events are external, "
                       "dispatched by gdrhook");
}

// Under `looking`.
void look(bool load)
{
    if (bridging.load(std::memory_order_relaxed))
        return;
    const Result<UcmFunctions> found = find_ucm(load);
    if (found)
        start_bridging(*found);
    else if (load)
        diagnostics().warn("GDRHOOK_UCX=on: {}; UCX is not told of CUDA frees", found.why());
}

// What UCX calls the memory of `kind`, as its own CUDA hooks name it
// (src/ucm/cuda/cudamem.c): cuMemFreeHost's memory is host memory to UCX,
// freed but never announced.
bool ucx_memory_type(MemoryKind kind, bool free, ucm::MemoryType &out)
{
    switch (kind) {
    case MemoryKind::device:
    case MemoryKind::pitch:
    case MemoryKind::pool:
    case MemoryKind::graph:
    case MemoryKind::ipc:
    case MemoryKind::vmm_mapping: out = ucm::memory_type_cuda; return true;
    case MemoryKind::managed: out = ucm::memory_type_cuda_managed; return true;
    case MemoryKind::host: out = ucm::memory_type_host; return free;
    default: return false;
    }
}

void dispatch(int event_type, ucm::MemoryType type, uint64_t addr, uint64_t size)
{
    if (inside_ucm_dispatch)
        return;
    inside_ucm_dispatch = true;
    ucm::Event event{};
    event.mem_type.address = reinterpret_cast<void *>(addr);
    // UCX's hooks name at least one byte where the size is unknown.
    event.mem_type.size = size ? size : 1;
    event.mem_type.mem_type = type;
    event.mem_type.sys_dev = ucm::sys_device_unknown;
    event.mem_type.mem_flags = 0;
    ucm.event_enter();
    ucm.event_dispatch(event_type, &event);
    ucm.event_leave();
    inside_ucm_dispatch = false;
}

} // namespace

FreeSubscriber ucx_free_subscriber()
{
    FreeSubscriber subscriber{};
    subscriber.name = "UCX";
    subscriber.before_free = tell_ucx_of_free;
    subscriber.before_context_teardown = tell_ucx_of_free;
    return subscriber;
}

AllocSubscriber ucx_alloc_subscriber()
{
    AllocSubscriber subscriber{};
    subscriber.name = "UCX";
    subscriber.after_alloc = [](const char *, Via, MemoryKind kind, int32_t, uint64_t addr,
                                uint64_t size) { tell_ucx_of_alloc(kind, addr, size); };
    subscriber.libraries_may_have_loaded = look_again_for_ucx;
    return subscriber;
}

void set_up_ucx_bridge(UcxBridgeMode mode, FreeSubscription free_place,
                       AllocSubscription alloc_place)
{
    std::lock_guard<std::mutex> lock(looking);
    bridge_mode = mode;
    free_subscription = free_place;
    alloc_subscription = alloc_place;
    if (mode == UcxBridgeMode::off)
        return;
    objects_loaded_since_last_look(); // the count this look starts from
    look(mode == UcxBridgeMode::on);
}

void look_again_for_ucx()
{
    if (bridging.load(std::memory_order_relaxed))
        return;
    std::lock_guard<std::mutex> lock(looking);
    if (bridge_mode != UcxBridgeMode::off && objects_loaded_since_last_look())
        look(false);
}

void tell_ucx_of_free(MemoryKind kind, uint64_t addr, uint64_t size)
{
    ucm::MemoryType type;
    if (addr && ucx_memory_type(kind, true, type))
        dispatch(ucm::event_mem_type_free, type, addr, size);
}

void tell_ucx_of_alloc(MemoryKind kind, uint64_t addr, uint64_t size)
{
    ucm::MemoryType type;
    if (addr && ucx_memory_type(kind, false, type))
        dispatch(ucm::event_mem_type_alloc, type, addr, size);
}

} // namespace gdrhook
