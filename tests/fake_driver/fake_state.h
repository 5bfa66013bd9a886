// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The test double of libcuda.so.1: the driver entry points the shim
// intercepts, implemented over host memory, so that CI (which has no GPU)
// exercises every resolution path. It behaves like the real driver where
// the shim depends on it: freed addresses come back from the next
// allocation of the same size (VA reuse), destroying a context frees what
// was allocated in it, and cuGetProcAddress hands out the driver's own
// functions (the library is linked with -Bsymbolic).
#pragma once

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace fake {

struct Context {
    int device = 0;
    bool primary = false;
};

struct Allocation {
    size_t size = 0;
    Context *context = nullptr;
    bool host = false;
    bool managed = false;        // cuMemAllocManaged: the driver refuses to export it
    bool pool = false;           // stream-ordered: from a memory pool
    bool graph = false;          // a graph allocation (captured, or an allocation node)
    bool mapped = false;         // graph: backed by memory, from a launch to a trim
    bool freed_in_graph = false; // graph: a free node ends it inside each launch
    bool sync_memops = false;    // CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: 0 until set
    CUgraph owner = nullptr;     // graph: the graph whose node made it
    bool pending = false;        // stream-ordered, its stream has not passed it yet
    bool freeing = false;        // cuMemFreeAsync queued: released once its stream passes it
    CUstream stream = nullptr;
};

// Whether memory backs the allocation now: graph memory only while mapped
// (fake_graph.cpp).
inline bool backed(const Allocation &a)
{
    return !a.graph || a.mapped;
}

// A device range cuMemHostGetDevicePointer handed out for a host range
// (integrated mode, fake_integrated.cpp).
struct HostAlias {
    uintptr_t host_base = 0;
    size_t size = 0;
};

struct Driver {
    std::mutex mutex;
    bool initialized = false;
    std::map<uintptr_t, Allocation> live;              // device/host allocations
    std::map<size_t, std::vector<uintptr_t>> recycled; // freed blocks by size, LIFO
    std::map<int, Context *> primary;                  // device -> primary context
    std::map<int, int> primary_refs;
    std::map<uint64_t, size_t> physical; // cuMemCreate handles
    std::map<uintptr_t, size_t> mapped;  // cuMemMap ranges: start -> size
    uint64_t next_handle = 0x1000;
    uint64_t next_buffer_id = 1;
    std::map<uintptr_t, uint64_t> buffer_ids;
    std::map<uint64_t, bool> compressible;           // cuMemCreate handle -> COMP_GENERIC
    std::map<uintptr_t, size_t> compressible_mapped; // mapped ranges of those
    std::map<uintptr_t, size_t> registered;          // cuMemHostRegister ranges
    std::map<uintptr_t, HostAlias> host_aliases;     // device range start -> host range
};

Driver &driver();
thread_local extern Context *current_context;

// Counts of calls that reached the fake, by entry point name, so tests can
// check that each wrapper called the real function exactly once. Returns
// the error FAKECUDA_FAIL injects at this call, else CUDA_SUCCESS:
// FAKECUDA_FAIL=NAME:N:RC[,NAME:N:RC...] makes the Nth call of NAME (from
// 1) return RC without doing anything, as a driver refusing it would.
CUresult count_call(const char *name);

// CUDA_ERROR_NOT_INITIALIZED in a child forked after cuInit (as the real
// driver answers there), success elsewhere: for the entry points that do
// not go through count_call().
CUresult refused_after_fork();

// Returns rc, counting it as a failed call of NAME when it is not success.
// With FAKECUDA_REPORT_FAILURES=1 the process prints the counts at exit
// ("fakecuda: failed calls: N (NAME=N ...)"), so a test can tell whether
// the shim made driver calls that fail where the program's own do not: a
// tool such as compute-sanitizer reports each as the program's error.
CUresult answer(const char *name, CUresult rc);

// The opaque handles the fake hands out (streams, graphs, pools): a heap
// cell each, counted and refusable like every entry point.
template <typename Handle> CUresult create_handle(const char *name, Handle *out)
{
    if (CUresult injected = count_call(name))
        return injected;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    *out = reinterpret_cast<Handle>(new int(0));
    return CUDA_SUCCESS;
}

template <typename Handle> CUresult destroy_handle(const char *name, Handle handle)
{
    if (CUresult injected = count_call(name))
        return injected;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    delete reinterpret_cast<int *>(handle);
    return CUDA_SUCCESS;
}

// Blocks are 64 KiB aligned anonymous mappings (a GPU page), so that the
// VM test's nv-p2p provider can pin them as the real driver pins GPU memory.
// mutex held; below_4g: for the 32-bit device pointers before CUDA 3.2
uintptr_t allocate_block(size_t size, bool host, bool below_4g = false);
size_t bytes_held_by_exports(); // mutex held: freed, still exported
// A pool's trim or destroy (mutex held): it gives back the freed pool
// memory no export holds; what an export holds at that moment stays with
// the pool, counted as used even once the export closes, until the next
// trim or destroy.
void pool_releases_memory();
// The cuMemMap'ed range containing [ptr, ptr + size), if any (mutex held).
bool in_mapped_range(uintptr_t ptr, size_t size);
// The cuMemMap mapping whose range holds ptr, if any (mutex held).
bool mapping_containing(uintptr_t ptr, uintptr_t &start, size_t &size);
void release_block(uintptr_t addr); // mutex held
// The stream has passed its queued work: the stream-ordered frees queued on
// it release their memory (all streams: nullptr and every_stream). Mutex held.
void complete_stream_frees(CUstream stream, bool every_stream = false);

// Fires the test provider's nv-p2p free callbacks for the range, as the
// real driver does when memory under a pin is freed; nothing where the
// provider (/dev/gdrhook_tp, VM test only) is absent. Mutex held, so the
// range cannot be handed out again before the callbacks have run.
void provider_free_range(uintptr_t addr, size_t size);

// Stream capture (fake_capture.cpp). True when a capture in progress
// prohibits a potentially unsafe call from this thread; those captures are
// then invalidated and the caller answers CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
bool capture_prohibits_unsafe_call();
bool stream_is_capturing(CUstream stream);
// The graph a capturing stream records into; null when it is not capturing.
CUgraph capturing_graph(CUstream stream);

// Graph memory (fake_graph.cpp). A graph allocation made on a capturing
// stream belongs to the capture's graph (mutex held).
void note_graph_allocation(uintptr_t addr, CUgraph graph);
// A stream-ordered free on a capturing stream is a free node: the memory
// ends inside each launch and its address stays the graph's (mutex held).
// False when addr is not a graph allocation.
bool free_in_graph(uintptr_t addr);
// Host memory exports as a dma-buf where FAKECUDA_HOST_DMABUF=1, as on a
// device reporting CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED.
// Whether the environment variable `name` is "1" (a mode switch of the fake).
bool env_is_one(const char *name);
bool host_dmabuf_supported();
// Integrated-GPU mode (fake_integrated.cpp): FAKECUDA_INTEGRATED=1.
bool integrated();
// addr in a device range of host memory: that range (mutex held).
bool host_alias_range(uintptr_t addr, uintptr_t &base, size_t &size);
// A host range is freed or unregistered (mutex held): its device ranges
// go, and in integrated mode a freed one's pages go back to the system.
void host_range_ends(uintptr_t base, size_t size, bool pages_go_back);
// A new, empty graph (a capture's), and one dropped unused (an invalidated
// capture's).
CUgraph create_graph();
void discard_graph(CUgraph graph);

} // namespace fake

extern "C" {
// Test controls, looked up by the test programs with dlsym.
__attribute__((visibility("default"))) long fake_cuda_call_count(const char *name);
__attribute__((visibility("default"))) long fake_cuda_live_allocations(void);
// While held, a device free (cuMemFree*) waits before it releases its
// memory, as the real driver's free waits for the device's work on it: the
// memory is still there, and exportable, for a while after the call began.
__attribute__((visibility("default"))) void fake_cuda_hold_frees(int hold);
// Frees waiting now.
__attribute__((visibility("default"))) long fake_cuda_frees_held(void);
// Blocks until at least `count` frees wait (a barrier for the tests that
// end the process while a free is in flight).
__attribute__((visibility("default"))) void fake_cuda_wait_frees_held(long count);
// How many times the driver was asked `attribute` of a pointer, by
// cuPointerGetAttribute or as one of cuPointerGetAttributes' attributes.
__attribute__((visibility("default"))) long fake_cuda_attribute_queries(int attribute);
// While held, cuPointerGetAttribute waits once it has its answer, before it
// returns it: the memory may be freed and made again meanwhile, as on
// another thread of a real program.
__attribute__((visibility("default"))) void fake_cuda_hold_pointer_answers(int hold);
// Blocks until at least `count` answers wait.
__attribute__((visibility("default"))) void fake_cuda_wait_pointer_answers_held(long count);
// Gives the allocation at ptr a new buffer id, as if it had been freed and
// made again behind the shim's back (what verify mode must catch).
__attribute__((visibility("default"))) void fake_cuda_renumber_buffer(CUdeviceptr ptr);
// What the driver answers, uncounted: the truth a test compares with.
__attribute__((visibility("default"))) CUresult
fake_cuda_pointer_attribute_truth(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
__attribute__((visibility("default"))) CUresult
fake_cuda_pointer_attributes_truth(unsigned int count, CUpointer_attribute *attributes, void **data,
                                   CUdeviceptr ptr);
}
