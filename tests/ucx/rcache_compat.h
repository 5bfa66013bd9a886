// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// ucs_rcache across UCX versions, for the programs that build UCX's own
// registration cache (tests/ucx/ucx_rcache.cpp, tests/gpu/ucx_rcache_py.cpp):
// Debian's libucx 1.13.1 (CI) and current UCX (1.22). Between them the
// alignment moved from the cache's parameters to ucs_rcache_get, and the
// operations gained `merge`, which UCX then calls unconditionally. UCX's
// headers carry no version macro of libucs, so the compiler is asked which
// API the headers declare (overloads and SFINAE).
#pragma once

extern "C" {
#include <ucm/api/ucm.h>
#include <ucs/memory/rcache.h>
}

#include <cstring>
#include <sys/mman.h>

namespace rcache_compat {

// UCX's CUDA memory domains align registrations to the GPU page.
constexpr size_t gpu_page = 65536;

inline void no_merge(void *, ucs_rcache_t *, void *, ucs_rcache_region_t *) {}

template <class Ops> auto set_merge(Ops &ops, int) -> decltype(ops.merge = no_merge, void())
{
    ops.merge = no_merge;
}
template <class Ops> void set_merge(Ops &, long) {}

/// The operations, `merge` a no-op where the headers have it.
inline ucs_rcache_ops_t make_ops(decltype(ucs_rcache_ops_t::mem_reg) reg,
                                 decltype(ucs_rcache_ops_t::mem_dereg) dereg,
                                 decltype(ucs_rcache_ops_t::dump_region) dump)
{
    ucs_rcache_ops_t ops;
    memset(&ops, 0, sizeof ops);
    ops.mem_reg = reg;
    ops.mem_dereg = dereg;
    ops.dump_region = dump;
    set_merge(ops, 0);
    return ops;
}

template <class Params>
auto set_alignment(Params &params, int) -> decltype(params.max_alignment = 0, void())
{
    params.alignment = UCS_PGT_ADDR_ALIGN;
    params.max_alignment = gpu_page;
}
template <class Params> void set_alignment(Params &, long) {}

/// Parameters as UCX's CUDA memory domains set theirs (gdr_copy:
/// UCM_EVENT_MEM_TYPE_FREE events at priority 1000, UCX_RCACHE_MEM_PRIO's
/// default; no limits, so no LRU), for regions of `region_size` bytes.
inline ucs_rcache_params_t cuda_md_params(size_t region_size, const ucs_rcache_ops_t *ops)
{
    ucs_rcache_params_t params;
    memset(&params, 0, sizeof params);
    params.region_struct_size = region_size;
    set_alignment(params, 0); // in the parameters up to UCX ~1.14
    params.ucm_events = UCM_EVENT_MEM_TYPE_FREE;
    params.ucm_event_priority = 1000;
    params.ops = ops;
    params.context = nullptr;
    params.flags = 0;
    params.max_regions = static_cast<unsigned long>(-1);
    params.max_size = static_cast<size_t>(-1);
    params.max_unreleased = static_cast<size_t>(-1);
    return params;
}

using GetWithoutAlignment = ucs_status_t (*)(ucs_rcache_t *, void *, size_t, int, void *,
                                             ucs_rcache_region_t **);
using GetWithAlignment = ucs_status_t (*)(ucs_rcache_t *, void *, size_t, size_t, int, void *,
                                          ucs_rcache_region_t **);

inline ucs_status_t get(GetWithoutAlignment get, ucs_rcache_t *rcache, void *address, size_t length,
                        void *arg, ucs_rcache_region_t **region)
{
    return get(rcache, address, length, PROT_READ | PROT_WRITE, arg, region);
}

inline ucs_status_t get(GetWithAlignment get, ucs_rcache_t *rcache, void *address, size_t length,
                        void *arg, ucs_rcache_region_t **region)
{
    return get(rcache, address, length, gpu_page, PROT_READ | PROT_WRITE, arg, region);
}

/// ucs_rcache_get, read and write, with the GPU page's alignment where the
/// call takes one.
inline ucs_status_t get(ucs_rcache_t *rcache, void *address, size_t length, void *arg,
                        ucs_rcache_region_t **region)
{
    return get(&ucs_rcache_get, rcache, address, length, arg, region);
}

} // namespace rcache_compat
