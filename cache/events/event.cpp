// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/event.h"

namespace gdrhook {

const char *to_string(EventKind kind)
{
    switch (kind) {
    case EventKind::alloc: return "alloc";
    case EventKind::free: return "free";
    case EventKind::pin: return "pin";
    case EventKind::unpin: return "unpin";
    case EventKind::revoke: return "revoke";
    case EventKind::ctx_destroy: return "ctx_destroy";
    case EventKind::error: return "error";
    case EventKind::sample: return "sample";
    case EventKind::skip: return "skip";
    }
    return "error";
}

const char *to_string(Via via)
{
    switch (via) {
    case Via::symbol: return "symbol";
    case Via::dlsym: return "dlsym";
    case Via::proc_address: return "cuGetProcAddress";
    case Via::runtime_entry: return "cudaGetDriverEntryPoint";
    }
    return "symbol";
}

const char *to_string(MemoryKind kind)
{
    switch (kind) {
    case MemoryKind::none: return "";
    case MemoryKind::device: return "device";
    case MemoryKind::pitch: return "pitch";
    case MemoryKind::pool: return "pool";
    case MemoryKind::managed: return "managed";
    case MemoryKind::host: return "host";
    case MemoryKind::host_registered: return "host_registered";
    case MemoryKind::vmm_physical: return "vmm_physical";
    case MemoryKind::vmm_mapping: return "vmm";
    case MemoryKind::ipc: return "ipc";
    case MemoryKind::graph: return "graph";
    }
    return "";
}

} // namespace gdrhook
