// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The driver's own resolution path: cuGetProcAddress(_v2), through which the
// CUDA runtime (static and shared) and the frameworks find every driver
// function, and the runtime's cudaGetDriverEntryPoint(ByVersion).
#include "hook/resolution.h"

#include "hook/entry_table.h"
#include "hook/runtime_start.h"
#include "hook/wrapper.h"

#include <climits>

namespace gdrhook {

void *interpose_proc_address(const char *symbol, int version, bool per_thread, void *function,
                             Via via)
{
    if (!symbol || !function)
        return function;
    // Already one of ours (the runtime's entry-point query goes through our
    // cuGetProcAddress): hand out the same wrapper, labelled for this path.
    if (const EntryInfo *ours = entry_for_wrapper(function))
        return ours->wrappers[static_cast<int>(via)];
    const EntryInfo *entry = find_entry_for_proc_address(symbol, version, per_thread);
    if (!entry || !hook_enabled())
        return function;
    // The wrapper forwards to the next definition after us, so that an
    // interposer preloaded after us sees these calls too; the driver's
    // answer only where there is none (real_functions.h).
    remember_real_function_if_none(entry->id, function);
    return entry->wrappers[static_cast<int>(via)];
}

} // namespace gdrhook

using namespace gdrhook;

GDRHOOK_WRAPPER(CUresult, cuGetProcAddress,
                (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags))
{
    GDRHOOK_REAL_OR_RETURN(real, cuGetProcAddress, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(symbol, pfn, cudaVersion, flags);
    if (rc == CUDA_SUCCESS && pfn)
        *pfn = interpose_proc_address(symbol, cudaVersion,
                                      flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, *pfn,
                                      Via::proc_address);
    return rc;
}

GDRHOOK_WRAPPER(CUresult, cuGetProcAddress_v2,
                (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                 CUdriverProcAddressQueryResult *symbolStatus))
{
    GDRHOOK_REAL_OR_RETURN(real, cuGetProcAddress_v2, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (rc == CUDA_SUCCESS && pfn)
        *pfn = interpose_proc_address(symbol, cudaVersion,
                                      flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, *pfn,
                                      Via::proc_address);
    return rc;
}

namespace {

// cudaGetDriverEntryPoint answers for the runtime's own CUDA version; any
// version we know is at most that, so "newest" picks the same symbol.
constexpr int runtime_version_unknown = INT_MAX;

cudaError_t interpose_entry_point(cudaError_t rc, const char *symbol, void **pfn, int version,
                                  bool per_thread)
{
    if (rc == cudaSuccess && pfn)
        *pfn = interpose_proc_address(symbol, version, per_thread, *pfn, Via::runtime_entry);
    return rc;
}

} // namespace

GDRHOOK_WRAPPER(cudaError_t, cudaGetDriverEntryPoint,
                (const char *symbol, void **pfn, unsigned long long flags,
                 enum cudaDriverEntryPointQueryResult *status))
{
    GDRHOOK_REAL_OR_RETURN(real, cudaGetDriverEntryPoint, cudaErrorInitializationError);
    return interpose_entry_point(real(symbol, pfn, flags, status), symbol, pfn,
                                 runtime_version_unknown, flags & cudaEnablePerThreadDefaultStream);
}

GDRHOOK_WRAPPER(cudaError_t, cudaGetDriverEntryPoint_ptsz,
                (const char *symbol, void **pfn, unsigned long long flags,
                 enum cudaDriverEntryPointQueryResult *status))
{
    GDRHOOK_REAL_OR_RETURN(real, cudaGetDriverEntryPoint_ptsz, cudaErrorInitializationError);
    // Compiled for per-thread default streams: "default" means per-thread.
    return interpose_entry_point(real(symbol, pfn, flags, status), symbol, pfn,
                                 runtime_version_unknown, !(flags & cudaEnableLegacyStream));
}

GDRHOOK_WRAPPER(cudaError_t, cudaGetDriverEntryPointByVersion,
                (const char *symbol, void **pfn, unsigned int cudaVersion, unsigned long long flags,
                 enum cudaDriverEntryPointQueryResult *status))
{
    GDRHOOK_REAL_OR_RETURN(real, cudaGetDriverEntryPointByVersion, cudaErrorInitializationError);
    return interpose_entry_point(real(symbol, pfn, cudaVersion, flags, status), symbol, pfn,
                                 static_cast<int>(cudaVersion),
                                 flags & cudaEnablePerThreadDefaultStream);
}

GDRHOOK_WRAPPER(cudaError_t, cudaGetDriverEntryPointByVersion_ptsz,
                (const char *symbol, void **pfn, unsigned int cudaVersion, unsigned long long flags,
                 enum cudaDriverEntryPointQueryResult *status))
{
    GDRHOOK_REAL_OR_RETURN(real, cudaGetDriverEntryPointByVersion_ptsz,
                           cudaErrorInitializationError);
    return interpose_entry_point(real(symbol, pfn, cudaVersion, flags, status), symbol, pfn,
                                 static_cast<int>(cudaVersion), !(flags & cudaEnableLegacyStream));
}
