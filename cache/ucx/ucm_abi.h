// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The part of UCX's libucm ABI the bridge uses, written out here so that
// the shim builds without UCX's headers and never links libucm
// (ucm_library.cpp finds it at run time). tests/ucx/ucm_abi_check.cpp
// checks every value and offset below against the UCX headers installed
// on the build machine (Debian 12: libucx-dev 1.13.1).
//
// Where each comes from, and that it is the same in UCX 1.13.1 (Debian 12)
// and in current UCX (openucx/ucx at v1.18.0, v1.20.0, v1.22.0 and master
// of 2026-08-21, read from the repository):
//  - the event bits: src/ucm/api/ucm.h, ucm_event_type_t:
//    UCM_EVENT_MEM_TYPE_ALLOC = UCS_BIT(20), UCM_EVENT_MEM_TYPE_FREE =
//    UCS_BIT(21), unchanged since 1.13.1;
//  - the memory types: src/ucs/memory/memory_type.h, ucs_memory_type_t:
//    HOST 0, CUDA 1, CUDA_MANAGED 2, the first three in every version
//    (later versions add types after ROCM_MANAGED, never before);
//  - the event: src/ucm/api/ucm.h, ucm_event_t's `mem_type` member:
//    {void *address; size_t size; ucs_memory_type_t mem_type;} in 1.13.1
//    to 1.21; 1.22 adds `ucs_sys_device_t sys_dev` (uint8_t) and `uint8_t
//    mem_flags` after mem_type, where older versions have padding. The
//    bridge sets them as UCX's own CUDA hooks do where they exist:
//    sys_dev UCS_SYS_DEVICE_ID_UNKNOWN (UINT8_MAX, src/ucs/sys/topo/base/
//    topo.h), which with mem_flags 0 asks UCX to detect the rest;
//  - the functions: ucm_set_external_event (src/ucm/api/ucm.h), and
//    ucm_event_enter, ucm_event_leave and ucm_event_dispatch
//    (src/ucm/event/event.h: not in the installed headers, but exported by
//    libucm.so.0, as UCX's own CUDA module calls them), with the same
//    signatures in every version above.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gdrhook::ucm {

constexpr int event_mem_type_alloc = 1 << 20; // UCM_EVENT_MEM_TYPE_ALLOC
constexpr int event_mem_type_free = 1 << 21;  // UCM_EVENT_MEM_TYPE_FREE

enum MemoryType : int {           // ucs_memory_type_t
    memory_type_host = 0,         // UCS_MEMORY_TYPE_HOST
    memory_type_cuda = 1,         // UCS_MEMORY_TYPE_CUDA
    memory_type_cuda_managed = 2, // UCS_MEMORY_TYPE_CUDA_MANAGED
};

constexpr uint8_t sys_device_unknown = UINT8_MAX; // UCS_SYS_DEVICE_ID_UNKNOWN

// ucm_event_t's mem_type member.
struct MemTypeEvent {
    void *address;
    size_t size;
    MemoryType mem_type;
    uint8_t sys_dev;   // since 1.22; padding before
    uint8_t mem_flags; // since 1.22; padding before
};

// ucm_event_t: a union whose largest member (mmap's) is 48 bytes in every
// version above; the room here is checked against the installed header.
union Event {
    MemTypeEvent mem_type;
    unsigned char room[64];
};

using SetExternalEvent = void (*)(int events);
using EventEnter = void (*)();
using EventLeave = void (*)();
using EventDispatch = void (*)(int event_type, Event *event);

} // namespace gdrhook::ucm
