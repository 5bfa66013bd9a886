// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Stream capture begin and end (cache/record/capture.h): each wrapper calls
// the real function exactly once and returns its result unchanged.
#include "cache/record/capture.h"
#include "hook/wrapper.h"

using namespace gdrhook;

namespace {

template <typename Call>
CUresult counted_begin(Call &&real_call)
{
    capture_beginning();
    CUresult rc = real_call();
    if (rc != CUDA_SUCCESS)
        capture_over();
    return rc;
}

// cuStreamEndCapture ends the capture whether it was valid (success) or
// invalidated; any other answer means the stream was not capturing.
CUresult counted_end(CUresult rc)
{
    if (rc == CUDA_SUCCESS || rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
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
