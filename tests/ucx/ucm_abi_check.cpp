// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// cache/ucx/ucm_abi.h against the UCX headers installed here (Debian 12:
// libucx-dev 1.13.1): the shim declares what it uses of libucm itself, and
// this translation unit fails to compile where a declaration is not UCX's.
#include "cache/ucx/ucm_abi.h"

extern "C" {
#include <ucm/api/ucm.h>
#include <ucs/memory/memory_type.h>
#include <ucs/sys/topo/base/topo.h>
}

#include <cstddef>
#include <type_traits>
#include <utility>

namespace {

namespace ucm = gdrhook::ucm;

static_assert(ucm::event_mem_type_alloc == UCM_EVENT_MEM_TYPE_ALLOC);
static_assert(ucm::event_mem_type_free == UCM_EVENT_MEM_TYPE_FREE);
static_assert(sizeof(ucm_event_type_t) == sizeof(int), "dispatched as an int");

static_assert(int(ucm::memory_type_host) == int(UCS_MEMORY_TYPE_HOST));
static_assert(int(ucm::memory_type_cuda) == int(UCS_MEMORY_TYPE_CUDA));
static_assert(int(ucm::memory_type_cuda_managed) == int(UCS_MEMORY_TYPE_CUDA_MANAGED));
static_assert(sizeof(ucm::MemoryType) == sizeof(ucs_memory_type_t));
static_assert(ucm::sys_device_unknown == UCS_SYS_DEVICE_ID_UNKNOWN);

// The event: the union is at least as large as UCX's, and the mem_type
// member's fields where UCX has them.
static_assert(sizeof(ucm::Event) >= sizeof(ucm_event_t));
static_assert(offsetof(ucm::Event, mem_type) == 0 && offsetof(ucm_event_t, mem_type) == 0);
static_assert(offsetof(ucm::MemTypeEvent, address) == offsetof(ucm_event_t, mem_type.address));
static_assert(offsetof(ucm::MemTypeEvent, size) == offsetof(ucm_event_t, mem_type.size));
static_assert(offsetof(ucm::MemTypeEvent, mem_type) == offsetof(ucm_event_t, mem_type.mem_type));

// sys_dev and mem_flags: UCX's fields where its header has them (1.22 on),
// else padding after mem_type, inside UCX's union.
using UcxMemTypeEvent = decltype(std::declval<ucm_event_t>().mem_type);

template <typename Event, typename = void> struct HasSysDev : std::false_type {};
template <typename Event>
struct HasSysDev<Event, std::void_t<decltype(std::declval<Event>().sys_dev)>> : std::true_type {};

template <typename Event> constexpr bool extra_fields_match()
{
    if constexpr (HasSysDev<Event>::value)
        return offsetof(ucm::MemTypeEvent, sys_dev) == offsetof(Event, sys_dev) &&
               offsetof(ucm::MemTypeEvent, mem_flags) == offsetof(Event, mem_flags);
    else
        return offsetof(ucm::MemTypeEvent, sys_dev) >=
                   offsetof(Event, mem_type) + sizeof(ucs_memory_type_t) &&
               sizeof(ucm::MemTypeEvent) <= sizeof(Event);
}
static_assert(extra_fields_match<UcxMemTypeEvent>());

// The public function this file can see; the others (ucm_event_enter,
// ucm_event_leave, ucm_event_dispatch) are in UCX's internal
// src/ucm/event/event.h, not installed.
static_assert(std::is_same_v<decltype(&ucm_set_external_event), ucm::SetExternalEvent>);

} // namespace
