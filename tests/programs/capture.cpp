// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Programs that stream-capture, use stream-ordered memory or compressible
// memory, the ways real applications do; on the fake driver and on a GPU.
//
//   capture global_async   captures in global mode a cuMemAllocAsync and its
//                          cuMemFreeAsync on the capturing stream, then
//                          allocates and frees with cuMemAlloc/cuMemFree
//   capture cross_free     one thread captures in global mode while another
//                          frees pinned memory (relaxed mode, as allocators
//                          do), waits for the unpin, and allocates
//                          stream-ordered memory on its own stream
//   capture driver_rules   what the driver answers (no shim needed): an
//                          unsafe call from another thread during a global,
//                          a global with a relaxed caller, a thread-local
//                          capture, and the end of each capture
//   capture unpinnable     managed and pinned host memory, allocated and freed
//   capture stream_ordered cuMemAllocAsync on a plain stream, synchronize,
//                          cuMemFreeAsync, N times
//   capture pool_lookup N [ROUNDS]
//                          cuMemAllocFromPoolAsync of 4 to 8 MiB on a plain
//                          stream; every other one synchronized and then
//                          looked up through gdrhook_get() (when the shim
//                          is loaded), as a library would before sending
//                          from it; cuMemFreeAsync; N times. Stream-ordered
//                          memory is pinned at its first lookup. The driver
//                          refuses to export some pool allocations (rc 1
//                          for every range of one that lies beyond the
//                          pool's first chunk, seen on an H200, driver
//                          580): those lookups fail, as they must, but one
//                          at least must succeed (else exit status 1).
//                          ROUNDS pools (default 1), each destroyed after
//                          its N; prints pool_memory_kept_max=BYTES, the
//                          most a destroyed pool left in use
//   capture pool_release_idle N [no_threads]
//                          (no_threads: the process may create no thread,
//                          so the shim has no worker)
//                          N pools, each with one allocation held through
//                          gdrhook_get() across its cuMemFreeAsync; once
//                          the shim's log holds that free (nothing else is
//                          queued), the hold is put and the pool trimmed
//                          to 0 (even rounds) or destroyed (odd rounds);
//                          prints trim_memory_kept_max= and
//                          destroy_memory_kept_max=, the most either left
//                          in use as it returned
//   capture invalidated    a global-mode capture invalidated by a
//                          cuMemAlloc on the capturing thread (the driver
//                          refuses it), ended with
//                          CUDA_ERROR_STREAM_CAPTURE_INVALIDATED; then a
//                          cuMemAlloc and cuMemFree (frees_made=1)
//   capture runtime_invalidated
//                          the same through the runtime, as a program built
//                          with per-thread default streams makes it:
//                          cudaStreamBeginCapture_ptsz of its default stream
//                          (begin_capture=RC), a cudaMalloc the driver
//                          refuses, cudaStreamEndCapture_ptsz
//                          (cudaErrorStreamCaptureInvalidated); then a
//                          cuMemAlloc and cuMemFree (frees_made=1)
//   capture runtime_invalidated_legacy
//                          the same with cudaStreamBeginCapture and
//                          cudaStreamEndCapture of a stream of its own
//   capture compressible   cuMemCreate with CU_MEM_ALLOCATION_COMP_GENERIC,
//                          mapped and freed (frees_made=3; a GPU without
//                          compression: nothing, frees_made=0)
//   capture vmm            the same without compression, and a library's
//                          registration of the mapping before its unmap
//
// Prints "end_capture=RC" where a capture ends; exit status 0 when every
// driver call answered as it does without the shim.
#include "cuda_checks.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <sys/inotify.h>
#include <thread>
#include <unistd.h>

#include "library_registration.h"
#include "no_new_threads.h"

#include <cuda_runtime_api.h>

// The per-thread-default-stream spellings, which the runtime header
// declares only when a program is built with per-thread default streams.
extern "C" {
cudaError_t CUDARTAPI cudaStreamBeginCapture_ptsz(cudaStream_t stream,
                                                  enum cudaStreamCaptureMode mode);
cudaError_t CUDARTAPI cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *graph);
}

namespace {

int global_async()
{
    CUstream stream;
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0;
    CHECK_CU(cuMemAllocAsync(&p, 4 << 20, stream));
    CHECK_CU(cuMemFreeAsync(p, stream));
    CUgraph graph = nullptr;
    CUresult rc = cuStreamEndCapture(stream, &graph);
    std::printf("end_capture=%d\n", int(rc));
    if (rc != CUDA_SUCCESS)
        return 1;
    CHECK_CU(cuGraphDestroy(graph));
    CHECK_CU(cuStreamDestroy(stream));
    // The capture is over: a plain allocation is pinned again.
    CUdeviceptr after = 0;
    CHECK_CU(cuMemAlloc(&after, 4 << 20));
    CHECK_CU(cuMemFree(after));
    return 0;
}

int cross_free(CUcontext ctx)
{
    CUdeviceptr held = 0;
    CHECK_CU(cuMemAlloc(&held, 4 << 20)); // pinned at allocation
    CUstream stream;
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUresult other = CUDA_SUCCESS;
    std::thread freer([&] {
        cuCtxSetCurrent(ctx);
        // cuMemFree is a call a global capture prohibits: an allocator
        // makes it in relaxed mode.
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        cuThreadExchangeStreamCaptureMode(&mode);
        CUresult rc = cuMemFree(held); // the worker unpins it during the capture
        cuThreadExchangeStreamCaptureMode(&mode);
        // Stream-ordered memory on this thread's own stream is legal in
        // global mode while another thread captures.
        CUstream own;
        CUdeviceptr again = 0;
        if (rc == CUDA_SUCCESS)
            rc = cuStreamCreate(&own, CU_STREAM_NON_BLOCKING);
        if (rc == CUDA_SUCCESS)
            rc = cuMemAllocAsync(&again, 4 << 20, own);
        std::this_thread::sleep_for(std::chrono::milliseconds(200)); // the worker runs
        if (rc == CUDA_SUCCESS)
            rc = cuMemFreeAsync(again, own);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        other = rc;
    });
    freer.join();
    CUgraph graph = nullptr;
    CUresult rc = cuStreamEndCapture(stream, &graph);
    std::printf("end_capture=%d\n", int(rc));
    if (other != CUDA_SUCCESS)
        return failed("the other thread's free or allocation", other);
    if (rc != CUDA_SUCCESS)
        return 1;
    CHECK_CU(cuGraphDestroy(graph));
    CHECK_CU(cuStreamDestroy(stream));
    return 0;
}

// What the driver does (no shim needed): prints the answers of an
// unsafe call from another thread during a capture in each mode, and of
// cuStreamEndCapture after it.
int driver_rules(CUcontext ctx)
{
    struct Case {
        const char *name;
        CUstreamCaptureMode capture;
        CUstreamCaptureMode caller;
    };
    const Case cases[] = {
        {"global", CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_GLOBAL},
        {"global_relaxed_caller", CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_RELAXED},
        {"thread_local", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_GLOBAL},
    };
    CUstream stream;
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    for (const Case &c : cases) {
        CHECK_CU(cuStreamBeginCapture_v2(stream, c.capture));
        CUresult alloc_rc = CUDA_SUCCESS;
        std::thread other([&] {
            cuCtxSetCurrent(ctx);
            CUstreamCaptureMode mode = c.caller;
            cuThreadExchangeStreamCaptureMode(&mode);
            CUdeviceptr p = 0;
            alloc_rc = cuMemAlloc(&p, 1 << 20);
            if (alloc_rc == CUDA_SUCCESS)
                cuMemFree(p);
            cuThreadExchangeStreamCaptureMode(&mode);
        });
        other.join();
        CUgraph graph = nullptr;
        CUresult end_rc = cuStreamEndCapture(stream, &graph);
        if (graph)
            cuGraphDestroy(graph);
        std::printf("%s: alloc=%d end=%d\n", c.name, int(alloc_rc), int(end_rc));
    }
    CHECK_CU(cuStreamDestroy(stream));
    return 0;
}

// The capture ends invalidated, not with success: it is over all the same.
int invalidated()
{
    CUstream stream;
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr refused = 0;
    std::printf("alloc_during_capture=%d\n", int(cuMemAlloc(&refused, 4 << 20)));
    CUgraph graph = nullptr;
    CUresult rc = cuStreamEndCapture(stream, &graph);
    std::printf("end_capture=%d\n", int(rc));
    if (rc != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        return 1;
    CHECK_CU(cuStreamDestroy(stream));
    CUdeviceptr after = 0;
    CHECK_CU(cuMemAlloc(&after, 4 << 20));
    CHECK_CU(cuMemFree(after));
    std::printf("frees_made=1\n");
    return 0;
}

// Through the runtime: the thread's own default stream with the _ptsz
// calls (a program built with per-thread default streams), or a stream of
// its own with the legacy calls. The allocation after the capture is the
// driver's, which the shim sees however the runtime reaches the driver.
int runtime_invalidated(bool per_thread)
{
    cudaStream_t stream = nullptr; // the thread's own, with the _ptsz calls
    if (!per_thread) {
        CUstream own;
        CHECK_CU(cuStreamCreate(&own, CU_STREAM_NON_BLOCKING));
        stream = reinterpret_cast<cudaStream_t>(own);
    }
    const cudaError_t begin = per_thread
                                  ? cudaStreamBeginCapture_ptsz(stream, cudaStreamCaptureModeGlobal)
                                  : cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
    std::printf("begin_capture=%d\n", int(begin));
    if (begin != cudaSuccess)
        return 1;
    void *refused = nullptr;
    std::printf("alloc_during_capture=%d\n", int(cudaMalloc(&refused, 4 << 20)));
    cudaGraph_t graph = nullptr;
    const cudaError_t end = per_thread ? cudaStreamEndCapture_ptsz(stream, &graph)
                                       : cudaStreamEndCapture(stream, &graph);
    std::printf("end_capture=%d\n", int(end));
    if (end != cudaErrorStreamCaptureInvalidated)
        return 1;
    if (!per_thread)
        CHECK_CU(cuStreamDestroy(reinterpret_cast<CUstream>(stream)));
    CUdeviceptr after = 0;
    CHECK_CU(cuMemAlloc(&after, 4 << 20));
    CHECK_CU(cuMemFree(after));
    std::printf("frees_made=1\n");
    return 0;
}

int unpinnable()
{
    CUdeviceptr managed = 0;
    CHECK_CU(cuMemAllocManaged(&managed, 4 << 20, CU_MEM_ATTACH_GLOBAL));
    CHECK_CU(cuMemFree(managed));
    void *host = nullptr;
    CHECK_CU(cuMemAllocHost(&host, 4 << 20));
    CHECK_CU(cuMemFreeHost(host));
    return 0;
}

int stream_ordered(int count)
{
    CUstream stream;
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < count; ++i) {
        CUdeviceptr p = 0;
        CHECK_CU(cuMemAllocAsync(&p, 4 << 20, stream));
        if (i % 2)
            CHECK_CU(cuStreamSynchronize(stream));
        CHECK_CU(cuMemFreeAsync(p, stream));
    }
    CHECK_CU(cuStreamSynchronize(stream));
    CHECK_CU(cuStreamDestroy(stream));
    return 0;
}

int mapped_memory(bool compressed)
{
    int supported = 0;
    CHECK_CU(
        cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, 0));
    if (compressed && !supported) {
        std::printf("compression unsupported\nfrees_made=0\n");
        return 0;
    }
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    if (compressed)
        prop.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
    size_t granularity = 0;
    CHECK_CU(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    const size_t size = granularity * 2;
    CUdeviceptr va = 0;
    CHECK_CU(cuMemAddressReserve(&va, size, 0, 0, 0));
    CUmemGenericAllocationHandle handle;
    CHECK_CU(cuMemCreate(&handle, size, &prop, 0));
    CHECK_CU(cuMemMap(va, size, 0, handle, 0));
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(cuMemSetAccess(va, size, &access, 1));
    // A library registers the mapping before it sends from it: under the
    // shim its get prepares the pin made at the map for a peer, which must
    // ask the driver nothing it refuses for VMM memory.
    if (!compressed)
        register_with_shim(va, size);
    CHECK_CU(cuMemUnmap(va, size));
    CHECK_CU(cuMemRelease(handle));
    CHECK_CU(cuMemAddressFree(va, size));
    std::printf("frees_made=3\n"); // unmap, release, address free
    return 0;
}

size_t free_device_memory()
{
    size_t free_bytes = 0, total = 0;
    cuMemGetInfo(&free_bytes, &total);
    return free_bytes;
}

// How much more device memory is in use now than when `free_before` was
// read (negative: less).
long long used_since(size_t free_before)
{
    return static_cast<long long>(free_before) - static_cast<long long>(free_device_memory());
}

// A pool of the device's memory, made by the program.
CUresult create_device_pool(CUdevice dev, CUmemoryPool &pool)
{
    CUmemPoolProps props;
    std::memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    return cuMemPoolCreate(&pool, &props);
}

// One pool: `count` allocations, every other one looked up once valid,
// then the pool destroyed. Returns how much more device memory is in use
// after the destroy than before the pool was made (negative: less).
long long pool_round(CUdevice dev, int count, bool &shim, int &registered)
{
    const size_t free_before = free_device_memory();
    CUmemoryPool pool;
    CHECK_CU(create_device_pool(dev, pool));
    CUstream stream;
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    std::vector<gdrhook_registration> held;
    for (int i = 0; i < count; ++i) {
        const size_t bytes = size_t(4 + i % 5) << 20;
        CUdeviceptr p = 0;
        CHECK_CU(cuMemAllocFromPoolAsync(&p, bytes, pool, stream));
        if (i % 2) {
            CHECK_CU(cuStreamSynchronize(stream));
            // Every other one is still held (a send in flight) when it is
            // freed: the free cannot unpin it, the put below can only wake
            // the worker, and the destroy must not return before the unpin.
            const Registered answer =
                i % 4 == 1 ? hold_with_shim(p, bytes, held) : register_with_shim(p, bytes);
            shim = answer != Registered::no_shim;
            registered += answer == Registered::yes;
        }
        CHECK_CU(cuMemFreeAsync(p, stream));
    }
    CHECK_CU(cuStreamSynchronize(stream));
    release_held(held);
    CHECK_CU(cuStreamDestroy(stream));
    CHECK_CU(cuMemPoolDestroy(pool));
    return used_since(free_before);
}

size_t lines_containing(const char *path, const std::string &text)
{
    std::ifstream in(path);
    size_t count = 0;
    for (std::string line; std::getline(in, line);)
        count += line.find(text) != std::string::npos;
    return count;
}

// Blocks until the shim's log (GDRHOOK_EVENTS, a plain path) holds
// `count` lines containing `text`: the worker has written, and so taken
// from the queue, every event recorded before them. Nothing to wait for
// without a log.
void wait_until_logged(const std::string &text, size_t count)
{
    const char *log = std::getenv("GDRHOOK_EVENTS");
    if (!log)
        return;
    // Its folder is watched, since the log appears only with its first
    // line; before the first count, so that a line written after it wakes
    // the read.
    const std::string path = log;
    const std::string folder = path.substr(0, path.find_last_of('/') + 1) + ".";
    int watch = inotify_init1(IN_CLOEXEC);
    if (watch < 0 || inotify_add_watch(watch, folder.c_str(), IN_CREATE | IN_MODIFY) < 0) {
        std::fprintf(stderr, "cannot watch %s\n", folder.c_str());
        std::exit(1);
    }
    char events[4096];
    while (lines_containing(log, text) < count)
        if (read(watch, events, sizeof(events)) < 0)
            break;
    close(watch);
}

// Each round: a pool whose one allocation was held across its free and
// put since, trimmed or destroyed with nothing else in the shim's queue.
// What the release left in use as it returned, at most, per call.
int pool_release_idle(CUdevice dev, int rounds)
{
    long long kept_max[2] = {0, 0}; // trim, destroy
    for (int r = 0; r < rounds; ++r) {
        const size_t free_before = free_device_memory();
        CUmemoryPool pool;
        CHECK_CU(create_device_pool(dev, pool));
        CUstream stream;
        CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
        CUdeviceptr p = 0;
        CHECK_CU(cuMemAllocFromPoolAsync(&p, 4 << 20, pool, stream));
        CHECK_CU(cuStreamSynchronize(stream));
        std::vector<gdrhook_registration> held;
        if (hold_with_shim(p, 4 << 20, held) == Registered::refused)
            return failed("gdrhook_get of pool memory", CUDA_ERROR_UNKNOWN);
        CHECK_CU(cuMemFreeAsync(p, stream));
        CHECK_CU(cuStreamSynchronize(stream));
        CHECK_CU(cuStreamDestroy(stream));
        wait_until_logged("\"ev\":\"free\",\"api\":\"cuMemFreeAsync\"", size_t(r) + 1);
        release_held(held);
        const bool trim = r % 2 == 0;
        if (trim)
            CHECK_CU(cuMemPoolTrimTo(pool, 0));
        else
            CHECK_CU(cuMemPoolDestroy(pool));
        kept_max[!trim] = std::max(kept_max[!trim], used_since(free_before));
        if (trim)
            CHECK_CU(cuMemPoolDestroy(pool));
    }
    std::printf("trim_memory_kept_max=%lld\ndestroy_memory_kept_max=%lld\n", kept_max[0],
                kept_max[1]);
    return 0;
}

// `rounds` pools one after the other; prints the most memory a destroyed
// pool left in use (a pool's memory is back when cuMemPoolDestroy
// returns, unless an export of it is still open).
int pool_lookup(int count, int rounds)
{
    CUdevice dev;
    CHECK_CU(cuCtxGetDevice(&dev));
    bool shim = false;
    int registered = 0;
    long long kept_max = 0;
    for (int r = 0; r < rounds; ++r)
        kept_max = std::max(kept_max, pool_round(dev, count, shim, registered));
    if (shim && registered == 0 && count > 1) {
        std::fprintf(stderr, "the shim registered none of the synchronized pool allocations\n");
        return 1;
    }
    std::printf("frees_made=%d\n", rounds * (count + 1)); // and cuMemPoolDestroy
    std::fprintf(stderr, "pool_memory_kept_max=%lld\n", kept_max);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    // The shim's worker cannot start: only the program's own calls can do
    // what the shim promises before they return.
    if (argc > 3 && !std::strcmp(argv[3], "no_threads") && !forbid_new_threads()) {
        std::perror("seccomp");
        return 1;
    }
    CUcontext ctx = current_primary_context();
    if (!ctx)
        return failed("context setup", CUDA_ERROR_UNKNOWN);
    if (!std::strcmp(mode, "global_async"))
        return global_async();
    if (!std::strcmp(mode, "unpinnable"))
        return unpinnable();
    if (!std::strcmp(mode, "driver_rules"))
        return driver_rules(ctx);
    if (!std::strcmp(mode, "cross_free"))
        return cross_free(ctx);
    if (!std::strcmp(mode, "invalidated"))
        return invalidated();
    if (!std::strcmp(mode, "runtime_invalidated"))
        return runtime_invalidated(true);
    if (!std::strcmp(mode, "runtime_invalidated_legacy"))
        return runtime_invalidated(false);
    if (!std::strcmp(mode, "pool_release_idle")) {
        CUdevice dev;
        CHECK_CU(cuCtxGetDevice(&dev));
        return pool_release_idle(dev, argc > 2 ? std::atoi(argv[2]) : 10);
    }
    if (!std::strcmp(mode, "stream_ordered"))
        return stream_ordered(argc > 2 ? std::atoi(argv[2]) : 20);
    const bool pool = !std::strcmp(mode, "pool_lookup");
    if (pool || !std::strcmp(mode, "compressible") || !std::strcmp(mode, "vmm")) {
        const size_t free_at_start = free_device_memory();
        int rc = pool ? pool_lookup(argc > 2 ? std::atoi(argv[2]) : 20,
                                    argc > 3 ? std::atoi(argv[3]) : 1)
                      : mapped_memory(!std::strcmp(mode, "compressible"));
        // For tests/gpu/run.sh's table.
        std::fprintf(stderr, "mem_used_delta=%lld\n", used_since(free_at_start));
        return rc;
    }
    std::fprintf(
        stderr,
        "usage: capture global_async|cross_free|stream_ordered [N]|pool_lookup [N [ROUNDS]]|"
        "pool_release_idle [N]|invalidated|runtime_invalidated[_legacy]|compressible|vmm\n");
    return 2;
}
