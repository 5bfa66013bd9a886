// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Stream capture begin and end (cache/base/capture.h): each wrapper calls
// the real function exactly once and returns its result unchanged.
#include "cache/base/capture.h"
#include "hook/wrapper.h"

using namespace gdrhook;

namespace {

template <typename Call> CUresult counted_begin(Call &&real_call)
{
    capture_beginning();
    CUresult rc = real_call();
    if (rc != CUDA_SUCCESS)
        capture_over();
    return rc;
}

// An end call ended the capture whether it was valid (success) or
// invalidated (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and
// cudaErrorStreamCaptureInvalidated are both 901); any other answer means
// the stream was not capturing. One test for the driver's and the
// runtime's answers.
bool capture_ended(int rc)
{
    static_assert(int(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) ==
                  int(cudaErrorStreamCaptureInvalidated));
    return rc == CUDA_SUCCESS || rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
}

CUresult counted_end(CUresult rc)
{
    if (capture_ended(rc))
        capture_over();
    return rc;
}

// The runtime's begin and end reach the driver through the wrappers below
// (its cuGetProcAddress lookups, the per-thread-stream variants too); where
// they did not (a runtime that reached the driver some way we do not see),
// the runtime's wrapper counts.
template <typename Call> cudaError_t runtime_begin(Call &&real_call)
{
    const uint32_t before = captures_counted_on_thread;
    capture_beginning();
    cudaError_t rc = real_call();
    if (rc != cudaSuccess || captures_counted_on_thread != before + 1)
        capture_over(); // failed, or the driver-level wrapper counted it
    return rc;
}

template <typename Call> cudaError_t runtime_end(Call &&real_call)
{
    const uint32_t before = captures_counted_on_thread;
    cudaError_t rc = real_call();
    if (captures_counted_on_thread == before && capture_ended(rc))
        capture_over();
    return rc;
}

} // namespace

GDRHOOK_WRAPPER(CUresult, cuStreamBeginCapture, (CUstream stream))
{
    GDRHOOK_REAL_OR_RETURN(real, cuStreamBeginCapture, CUDA_ERROR_NOT_INITIALIZED);
    return counted_begin([&] { return real(stream); });
}

GDRHOOK_WRAPPER(CUresult, cuStreamBeginCapture_v2, (CUstream stream, CUstreamCaptureMode mode))
{
    GDRHOOK_REAL_OR_RETURN(real, cuStreamBeginCapture_v2, CUDA_ERROR_NOT_INITIALIZED);
    return counted_begin([&] { return real(stream, mode); });
}

GDRHOOK_WRAPPER(CUresult, cuStreamBeginCaptureToGraph,
                (CUstream stream, CUgraph graph, const CUgraphNode *dependencies,
                 const CUgraphEdgeData *edges, size_t count, CUstreamCaptureMode mode))
{
    GDRHOOK_REAL_OR_RETURN(real, cuStreamBeginCaptureToGraph, CUDA_ERROR_NOT_INITIALIZED);
    return counted_begin([&] { return real(stream, graph, dependencies, edges, count, mode); });
}

GDRHOOK_WRAPPER(CUresult, cuStreamEndCapture, (CUstream stream, CUgraph *graph))
{
    GDRHOOK_REAL_OR_RETURN(real, cuStreamEndCapture, CUDA_ERROR_NOT_INITIALIZED);
    return counted_end(real(stream, graph));
}

// The per-thread-stream variants, which the runtime's _ptsz entry points
// and programs built with per-thread default streams reach: the handle 0
// is the calling thread's default stream there, not the legacy one.
GDRHOOK_WRAPPER(CUresult, cuStreamBeginCapture_ptsz, (CUstream stream))
{
    GDRHOOK_REAL_OR_RETURN(real, cuStreamBeginCapture_ptsz, CUDA_ERROR_NOT_INITIALIZED);
    return counted_begin([&] { return real(stream); });
}

GDRHOOK_WRAPPER(CUresult, cuStreamBeginCapture_v2_ptsz, (CUstream stream, CUstreamCaptureMode mode))
{
    GDRHOOK_REAL_OR_RETURN(real, cuStreamBeginCapture_v2_ptsz, CUDA_ERROR_NOT_INITIALIZED);
    return counted_begin([&] { return real(stream, mode); });
}

GDRHOOK_WRAPPER(CUresult, cuStreamBeginCaptureToGraph_ptsz,
                (CUstream stream, CUgraph graph, const CUgraphNode *dependencies,
                 const CUgraphEdgeData *edges, size_t count, CUstreamCaptureMode mode))
{
    GDRHOOK_REAL_OR_RETURN(real, cuStreamBeginCaptureToGraph_ptsz, CUDA_ERROR_NOT_INITIALIZED);
    return counted_begin([&] { return real(stream, graph, dependencies, edges, count, mode); });
}

GDRHOOK_WRAPPER(CUresult, cuStreamEndCapture_ptsz, (CUstream stream, CUgraph *graph))
{
    GDRHOOK_REAL_OR_RETURN(real, cuStreamEndCapture_ptsz, CUDA_ERROR_NOT_INITIALIZED);
    return counted_end(real(stream, graph));
}

GDRHOOK_WRAPPER(cudaError_t, cudaStreamBeginCapture,
                (cudaStream_t stream, enum cudaStreamCaptureMode mode))
{
    GDRHOOK_REAL_OR_RETURN(real, cudaStreamBeginCapture, cudaErrorInitializationError);
    return runtime_begin([&] { return real(stream, mode); });
}

GDRHOOK_WRAPPER(cudaError_t, cudaStreamBeginCapture_ptsz,
                (cudaStream_t stream, enum cudaStreamCaptureMode mode))
{
    GDRHOOK_REAL_OR_RETURN(real, cudaStreamBeginCapture_ptsz, cudaErrorInitializationError);
    return runtime_begin([&] { return real(stream, mode); });
}

GDRHOOK_WRAPPER(cudaError_t, cudaStreamEndCapture, (cudaStream_t stream, cudaGraph_t *graph))
{
    GDRHOOK_REAL_OR_RETURN(real, cudaStreamEndCapture, cudaErrorInitializationError);
    return runtime_end([&] { return real(stream, graph); });
}

GDRHOOK_WRAPPER(cudaError_t, cudaStreamEndCapture_ptsz, (cudaStream_t stream, cudaGraph_t *graph))
{
    GDRHOOK_REAL_OR_RETURN(real, cudaStreamEndCapture_ptsz, cudaErrorInitializationError);
    return runtime_end([&] { return real(stream, graph); });
}
