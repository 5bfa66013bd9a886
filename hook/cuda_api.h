// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The CUDA headers, as the shim sees them: every versioned name spelled out
// (cuMemFree_v2, cuCtxDestroy and cuCtxDestroy_v2, the _ptsz variants), the
// way the driver itself is built, instead of the macros that map an
// application's names onto the newest version.
#pragma once

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#undef __CUDA_API_VERSION_INTERNAL

// cudaGetDriverEntryPoint is deprecated, but programs still call it.
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda_runtime_api.h>

// Per-thread-stream variants of the driver's capture calls, which cuda.h
// declares only through its per-thread macros (cudaTypedefs.h has their
// PFN_*_ptsz types).
extern "C" {
CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream);
CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                  const CUgraphNode *dependencies,
                                                  const CUgraphEdgeData *dependencyData,
                                                  size_t numDependencies, CUstreamCaptureMode mode);
CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph);
}

// Per-thread-stream variants of the runtime entry points we wrap; the
// runtime header declares only one spelling at a time.
extern "C" {
cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void *devPtr, cudaStream_t stream);
cudaError_t CUDARTAPI cudaStreamBeginCapture_ptsz(cudaStream_t stream,
                                                  enum cudaStreamCaptureMode mode);
cudaError_t CUDARTAPI cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *graph);
cudaError_t CUDARTAPI
cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                             enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion_ptsz(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *driverStatus);
}
