// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the stream-ordered wrappers (driver_wrappers.cpp) tell the graph
// memory record when the stream is capturing: an allocation on it is a
// node of the capture's graph, a free on it a free node. Outside a
// capture, one inlined test of the hot line.
#pragma once

#include "cache/base/capture.h"
#include "hook/cuda_api.h"

namespace gdrhook {

void note_captured_allocation(CUstream stream, bool per_thread, CUresult rc,
                              const CUdeviceptr *dptr, size_t size);
void note_captured_free(CUstream stream, bool per_thread, CUresult rc, CUdeviceptr dptr);

inline void note_stream_allocation(CUstream stream, bool per_thread, CUresult rc,
                                   const CUdeviceptr *dptr, size_t size)
{
    if (capture_in_progress())
        note_captured_allocation(stream, per_thread, rc, dptr, size);
}

inline void note_stream_free(CUstream stream, bool per_thread, CUresult rc, CUdeviceptr dptr)
{
    if (capture_in_progress())
        note_captured_free(stream, per_thread, rc, dptr);
}

} // namespace gdrhook
