// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Stream capture in the fake driver, failing as the real driver fails
// (docs/design.md): while a capture in global mode is in progress on any
// thread, or one in thread-local mode on the calling thread, a "potentially
// unsafe" call (cuMemAlloc, cuMemFree, cuCtxSynchronize,
// cuPointerSetAttribute(SYNC_MEMOPS)) made in a non-relaxed mode fails with
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates those captures, so
// that cuStreamEndCapture answers CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
// Streams are plain handles; stream-ordered allocations stay invalid for
// export until their stream is synchronized.
#include "fake_state.h"

#include <map>
#include <thread>

using namespace fake;

namespace {

struct Capture {
    CUstreamCaptureMode mode;
    std::thread::id owner;
    bool invalidated;
    CUgraph graph; // what the capture records into
};

std::mutex capture_mutex;
std::map<CUstream, Capture> &captures()
{
    static auto *map = new std::map<CUstream, Capture>();
    return *map;
}
thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

CUresult begin(const char *name, CUstream stream, CUstreamCaptureMode mode)
{
    if (CUresult injected = count_call(name))
        return injected;
    if (!stream) // the legacy default stream cannot be captured
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraph graph = create_graph();
    std::lock_guard<std::mutex> lock(capture_mutex);
    if (!captures().emplace(stream, Capture{mode, std::this_thread::get_id(), false, graph}).second) {
        discard_graph(graph);
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    return CUDA_SUCCESS;
}

// In the per-thread-stream variants the handle 0 is the calling thread's
// default stream, which can be captured (the legacy one cannot).
CUstream per_thread_stream(CUstream stream)
{
    static thread_local char default_stream;
    return stream ? stream : reinterpret_cast<CUstream>(&default_stream);
}

CUresult end_capture(const char *name, CUstream stream, CUgraph *graph);

} // namespace

namespace fake {

bool capture_prohibits_unsafe_call()
{
    if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return false;
    std::lock_guard<std::mutex> lock(capture_mutex);
    bool prohibited = false;
    for (auto &entry : captures()) {
        Capture &c = entry.second;
        const bool mine = c.owner == std::this_thread::get_id();
        const bool applies = c.mode == CU_STREAM_CAPTURE_MODE_GLOBAL
                                 ? (thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL || mine)
                                 : (c.mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL && mine);
        if (applies) {
            c.invalidated = true;
            prohibited = true;
        }
    }
    return prohibited;
}

bool stream_is_capturing(CUstream stream)
{
    std::lock_guard<std::mutex> lock(capture_mutex);
    return stream && captures().count(stream);
}

CUgraph capturing_graph(CUstream stream)
{
    std::lock_guard<std::mutex> lock(capture_mutex);
    auto it = stream ? captures().find(stream) : captures().end();
    return it == captures().end() ? nullptr : it->second.graph;
}

} // namespace fake

extern "C" {

CUresult cuStreamCreate(CUstream *stream, unsigned int)
{
    return create_handle("cuStreamCreate", stream);
}

// The stream's queued frees still happen, as the driver finishes its work.
CUresult cuStreamDestroy_v2(CUstream stream)
{
    {
        std::lock_guard<std::mutex> lock(driver().mutex);
        complete_stream_frees(stream);
    }
    return destroy_handle("cuStreamDestroy_v2", stream);
}

// The stream has passed everything queued on it: its stream-ordered
// allocations become valid for export.
CUresult cuStreamSynchronize(CUstream stream)
{
    if (CUresult injected = count_call("cuStreamSynchronize"))
        return injected;
    if (stream_is_capturing(stream))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    std::lock_guard<std::mutex> lock(driver().mutex);
    for (auto &entry : driver().live)
        if (entry.second.pending && entry.second.stream == stream)
            entry.second.pending = false;
    complete_stream_frees(stream);
    return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture(CUstream stream)
{
    return begin("cuStreamBeginCapture", stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}
CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode)
{
    return begin("cuStreamBeginCapture_v2", stream, mode);
}

// The per-thread-stream variants (per_thread_stream()).
CUresult cuStreamBeginCapture_ptsz(CUstream stream)
{
    return begin("cuStreamBeginCapture_ptsz", per_thread_stream(stream),
                 CU_STREAM_CAPTURE_MODE_GLOBAL);
}
CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode)
{
    return begin("cuStreamBeginCapture_v2_ptsz", per_thread_stream(stream), mode);
}

CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph)
{
    return end_capture("cuStreamEndCapture", stream, graph);
}
CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph *graph)
{
    return end_capture("cuStreamEndCapture_ptsz", per_thread_stream(stream), graph);
}

} // extern "C"

namespace {

CUresult end_capture(const char *name, CUstream stream, CUgraph *graph)
{
    if (CUresult injected = count_call(name))
        return injected;
    if (!graph)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(capture_mutex);
    auto it = captures().find(stream);
    if (it == captures().end())
        return CUDA_ERROR_ILLEGAL_STATE;
    const bool invalidated = it->second.invalidated;
    CUgraph captured = it->second.graph;
    captures().erase(it);
    *graph = nullptr;
    if (invalidated) {
        discard_graph(captured);
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *graph = captured;
    return CUDA_SUCCESS;
}

} // namespace

extern "C" {

// What a stream captures into: status, capture id, graph (the parts
// programs and the shim ask for).
CUresult cuStreamGetCaptureInfo_v2(CUstream stream, CUstreamCaptureStatus *status, cuuint64_t *id,
                                   CUgraph *graph, const CUgraphNode **dependencies, size_t *count)
{
    if (CUresult injected = count_call("cuStreamGetCaptureInfo_v2"))
        return injected;
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(capture_mutex);
    auto it = stream ? captures().find(stream) : captures().end();
    const bool capturing = it != captures().end();
    *status = !capturing               ? CU_STREAM_CAPTURE_STATUS_NONE
              : it->second.invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                       : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (id)
        *id = capturing ? reinterpret_cast<uintptr_t>(it->second.graph) : 0;
    if (graph)
        *graph = capturing ? it->second.graph : nullptr;
    if (dependencies)
        *dependencies = nullptr;
    if (count)
        *count = 0;
    return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus *status)
{
    if (CUresult injected = count_call("cuStreamIsCapturing"))
        return injected;
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(capture_mutex);
    auto it = captures().find(stream);
    *status = it == captures().end()   ? CU_STREAM_CAPTURE_STATUS_NONE
              : it->second.invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                       : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (CUresult injected = count_call("cuThreadExchangeStreamCaptureMode"))
        return injected;
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    const CUstreamCaptureMode previous = thread_mode;
    thread_mode = *mode;
    *mode = previous;
    return CUDA_SUCCESS;
}

} // extern "C"
