// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Plain, pitched, pool, managed and host allocations of the fake driver.
#include "fake_state.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <pthread.h>
#include <string>
#include <sys/mman.h>
#include <unordered_map>
#include <vector>

namespace fake {

namespace {
std::mutex counts_mutex;
std::unordered_map<std::string, long> &counts()
{
    static auto *map = new std::unordered_map<std::string, long>();
    return *map;
}
} // namespace

// A child forked after the driver was initialized cannot use it: on the
// real driver (H100, 580.159.04) every call there answers
// CUDA_ERROR_NOT_INITIALIZED, cuInit and cuCtxGetCurrent included, except
// cuDriverGetVersion. The fake's mutexes, which another thread may hold at
// the fork, are taken around it so that the child finds them free.
static bool forked_after_init = false;

static void lock_for_fork()
{
    driver().mutex.lock();
    counts_mutex.lock();
}
static void unlock_after_fork()
{
    counts_mutex.unlock();
    driver().mutex.unlock();
}
static void unlock_in_child()
{
    forked_after_init = forked_after_init || driver().initialized;
    unlock_after_fork();
}

Driver &driver()
{
    static Driver *instance = [] {
        auto *made = new Driver();
        pthread_atfork(lock_for_fork, unlock_after_fork, unlock_in_child);
        return made;
    }();
    return *instance;
}

thread_local Context *current_context = nullptr;

namespace {

struct InjectedFailure {
    std::string name;
    long call = 0;
    CUresult rc = CUDA_SUCCESS;
};

// FAKECUDA_FAIL, read once.
const std::vector<InjectedFailure> &injected_failures()
{
    static const std::vector<InjectedFailure> failures = [] {
        std::vector<InjectedFailure> out;
        const char *spec = getenv("FAKECUDA_FAIL");
        std::string text = spec ? spec : "";
        size_t start = 0;
        while (start < text.size()) {
            size_t end = text.find(',', start);
            std::string item = text.substr(start, end == std::string::npos ? end : end - start);
            size_t a = item.find(':'), b = item.rfind(':');
            if (a != std::string::npos && b != a)
                out.push_back({item.substr(0, a), atol(item.substr(a + 1, b - a - 1).c_str()),
                               static_cast<CUresult>(atoi(item.substr(b + 1).c_str()))});
            if (end == std::string::npos)
                break;
            start = end + 1;
        }
        return out;
    }();
    return failures;
}

} // namespace

CUresult refused_after_fork()
{
    return forked_after_init ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
}

CUresult count_call(const char *name)
{
    if (forked_after_init && strcmp(name, "cuDriverGetVersion") != 0)
        return CUDA_ERROR_NOT_INITIALIZED;
    long call;
    {
        std::lock_guard<std::mutex> lock(counts_mutex);
        call = ++counts()[name];
    }
    for (const InjectedFailure &f : injected_failures())
        if (f.call == call && f.name == name)
            return f.rc;
    return CUDA_SUCCESS;
}

namespace {
std::mutex failures_mutex;
std::map<std::string, long> &failures()
{
    static auto *counts = new std::map<std::string, long>; // outlives exit handlers
    return *counts;
}

struct FailureReport {
    ~FailureReport()
    {
        const char *wanted = getenv("FAKECUDA_REPORT_FAILURES");
        if (!wanted || strcmp(wanted, "1") != 0)
            return;
        std::lock_guard<std::mutex> lock(failures_mutex);
        long total = 0;
        std::string names;
        for (const auto &[name, count] : failures()) {
            total += count;
            names += " " + name + "=" + std::to_string(count);
        }
        fprintf(stderr, "fakecuda: failed calls: %ld (%s)\n", total,
                names.empty() ? "" : names.c_str() + 1);
    }
} failure_report;
} // namespace

CUresult answer(const char *name, CUresult rc)
{
    if (rc != CUDA_SUCCESS) {
        std::lock_guard<std::mutex> lock(failures_mutex);
        ++failures()[name];
    }
    return rc;
}

namespace {

// Memory for a block, below 4 GiB for the 32-bit device pointers of the
// API before CUDA 3.2: MAP_32BIT where the kernel has it (x86-64), else
// address hints below 4 GiB, each answer checked (the kernel may place the
// mapping elsewhere when the hint is taken).
void *map_block(size_t bytes, bool below_4g)
{
    constexpr int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#if defined(MAP_32BIT)
    return mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags | (below_4g ? MAP_32BIT : 0), -1, 0);
#else
    if (!below_4g)
        return mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
    constexpr uintptr_t step = 256u << 20;
    for (uintptr_t hint = step; hint + bytes <= UINT32_MAX; hint += step) {
        void *map =
            mmap(reinterpret_cast<void *>(hint), bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
        if (map == MAP_FAILED)
            return map;
        if (reinterpret_cast<uintptr_t>(map) + bytes <= UINT32_MAX)
            return map;
        munmap(map, bytes);
    }
    return MAP_FAILED;
#endif
}

} // namespace

uintptr_t allocate_block(size_t size, bool host, bool below_4g)
{
    Driver &d = driver();
    uintptr_t addr = 0;
    auto &freed = d.recycled[size];
    auto reusable = std::find_if(freed.rbegin(), freed.rend(),
                                 [&](uintptr_t a) { return !below_4g || a + size <= UINT32_MAX; });
    if (reusable != freed.rend()) {
        addr = *reusable; // the real driver hands the same VA back
        freed.erase(std::next(reusable).base());
    } else {
        // Never unmapped: a freed block waits in `recycled` for the next
        // allocation of its size.
        constexpr size_t gpu_page = 64 * 1024;
        const size_t rounded = size ? (size + gpu_page - 1) & ~(gpu_page - 1) : gpu_page;
        void *map = map_block(rounded + gpu_page, below_4g);
        if (map == MAP_FAILED)
            return 0;
        const uintptr_t start = reinterpret_cast<uintptr_t>(map);
        addr = (start + gpu_page - 1) & ~(gpu_page - 1);
        if (addr > start)
            munmap(map, addr - start);
        munmap(reinterpret_cast<void *>(addr + rounded), start + gpu_page - addr);
    }
    d.live[addr] = Allocation{size, current_context, host};
    d.buffer_ids[addr] = d.next_buffer_id++;
    return addr;
}

void release_block(uintptr_t addr)
{
    Driver &d = driver();
    auto it = d.live.find(addr);
    provider_free_range(addr, it->second.size);
    if (it->second.host)
        host_range_ends(addr, it->second.size, true);
    d.recycled[it->second.size].push_back(addr);
    d.buffer_ids.erase(addr);
    d.live.erase(it);
}

void complete_stream_frees(CUstream stream, bool every_stream)
{
    std::vector<uintptr_t> done;
    for (const auto &[addr, a] : driver().live)
        if (a.freeing && (every_stream || a.stream == stream))
            done.push_back(addr);
    for (uintptr_t addr : done)
        release_block(addr);
}

} // namespace fake

using namespace fake;

extern "C" {

long fake_cuda_call_count(const char *name)
{
    std::lock_guard<std::mutex> lock(counts_mutex);
    auto it = counts().find(name);
    return it == counts().end() ? 0 : it->second;
}

long fake_cuda_live_allocations(void)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    return static_cast<long>(driver().live.size());
}

namespace {
std::mutex hold_mutex;
std::condition_variable hold_changed;
bool frees_on_hold = false;
long frees_waiting = 0;

void wait_while_frees_held()
{
    std::unique_lock<std::mutex> lock(hold_mutex);
    if (!frees_on_hold)
        return;
    ++frees_waiting;
    hold_changed.notify_all(); // fake_cuda_wait_frees_held()
    hold_changed.wait(lock, [] { return !frees_on_hold; });
    --frees_waiting;
}

bool answers_on_hold = false;
long answers_waiting = 0;

void wait_while_answers_held()
{
    std::unique_lock<std::mutex> lock(hold_mutex);
    if (!answers_on_hold)
        return;
    ++answers_waiting;
    hold_changed.notify_all(); // fake_cuda_wait_pointer_answers_held()
    hold_changed.wait(lock, [] { return !answers_on_hold; });
    --answers_waiting;
}
} // namespace

void fake_cuda_hold_pointer_answers(int hold)
{
    {
        std::lock_guard<std::mutex> lock(hold_mutex);
        answers_on_hold = hold != 0;
    }
    hold_changed.notify_all();
}

void fake_cuda_wait_pointer_answers_held(long count)
{
    std::unique_lock<std::mutex> lock(hold_mutex);
    hold_changed.wait(lock, [count] { return answers_waiting >= count; });
}

void fake_cuda_hold_frees(int hold)
{
    {
        std::lock_guard<std::mutex> lock(hold_mutex);
        frees_on_hold = hold != 0;
    }
    hold_changed.notify_all();
}

long fake_cuda_frees_held(void)
{
    std::lock_guard<std::mutex> lock(hold_mutex);
    return frees_waiting;
}

void fake_cuda_wait_frees_held(long count)
{
    std::unique_lock<std::mutex> lock(hold_mutex);
    hold_changed.wait(lock, [count] { return frees_waiting >= count; });
}

static CUresult alloc_common(const char *name, CUdeviceptr *dptr, size_t size, bool host,
                             bool below_4g = false, bool unsafe = false)
{
    if (CUresult injected = count_call(name))
        return injected;
    if (unsafe && capture_prohibits_unsafe_call())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(driver().mutex);
    if (!driver().initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!host && !current_context)
        return CUDA_ERROR_INVALID_CONTEXT;
    uintptr_t addr = allocate_block(size, host, below_4g);
    if (!addr)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *dptr = addr;
    return CUDA_SUCCESS;
}

static CUresult free_common(const char *name, uintptr_t addr, bool unsafe = false)
{
    if (CUresult injected = count_call(name))
        return injected;
    if (unsafe && capture_prohibits_unsafe_call())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    wait_while_frees_held();
    std::lock_guard<std::mutex> lock(driver().mutex);
    if (!driver().live.count(addr))
        return CUDA_ERROR_INVALID_VALUE;
    release_block(addr);
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
    return alloc_common("cuMemAlloc_v2", dptr, size, false, false, true);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                            unsigned int)
{
    if (!pitch)
        return CUDA_ERROR_INVALID_VALUE;
    *pitch = (width + 511) & ~size_t(511);
    return alloc_common("cuMemAllocPitch_v2", dptr, *pitch * height, false, false, true);
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    return free_common("cuMemFree_v2", dptr, true);
}

// Before CUDA 3.2 device pointers and sizes were 32 bits: these hand out
// addresses below 4 GiB.
CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int size)
{
    CUdeviceptr p = 0;
    CUresult rc = alloc_common("cuMemAlloc", &p, size, false, true, true);
    if (rc == CUDA_SUCCESS)
        *dptr = static_cast<CUdeviceptr_v1>(p);
    return rc;
}

CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pitch, unsigned int width,
                         unsigned int height, unsigned int)
{
    if (!pitch || !dptr)
        return CUDA_ERROR_INVALID_VALUE;
    *pitch = (width + 511) & ~511u;
    CUdeviceptr p = 0;
    CUresult rc = alloc_common("cuMemAllocPitch", &p, size_t(*pitch) * height, false, true, true);
    if (rc == CUDA_SUCCESS)
        *dptr = static_cast<CUdeviceptr_v1>(p);
    return rc;
}

CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    return free_common("cuMemFree", dptr, true);
}

CUresult cuMemAllocHost(void **pp, unsigned int size)
{
    CUdeviceptr p = 0;
    CUresult rc = alloc_common("cuMemAllocHost", &p, size, true);
    if (rc == CUDA_SUCCESS)
        *pp = reinterpret_cast<void *>(p);
    return rc;
}

// Stream-ordered memory: on a capturing stream a graph allocation node
// (not memory until the graph runs); otherwise valid for export only once
// its stream has passed it (cuStreamSynchronize, cuCtxSynchronize).
static CUresult alloc_async(const char *name, CUdeviceptr *dptr, size_t size, CUstream stream)
{
    CUgraph graph = capturing_graph(stream);
    if (!graph) { // in stream order, memory freed earlier on the stream is reusable
        std::lock_guard<std::mutex> lock(driver().mutex);
        complete_stream_frees(stream);
    }
    CUresult rc = alloc_common(name, dptr, size, false);
    if (rc != CUDA_SUCCESS)
        return rc;
    std::lock_guard<std::mutex> lock(driver().mutex);
    Allocation &a = driver().live[*dptr];
    a.pool = true;
    a.pending = !graph;
    a.stream = stream;
    if (graph)
        note_graph_allocation(*dptr, graph);
    return CUDA_SUCCESS;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream stream)
{
    return alloc_async("cuMemAllocAsync", dptr, size, stream);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream stream)
{
    return alloc_async("cuMemAllocAsync_ptsz", dptr, size, stream);
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool, CUstream stream)
{
    return alloc_async("cuMemAllocFromPoolAsync", dptr, size, stream);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size, CUmemoryPool, CUstream stream)
{
    return alloc_async("cuMemAllocFromPoolAsync_ptsz", dptr, size, stream);
}
// On a capturing stream a free node: the address stays the graph's.
// Otherwise the free is queued on its stream, like the real one: the
// memory stays allocated (and exported dma-bufs of it valid) until the
// stream passes the free.
static CUresult free_async(const char *name, CUdeviceptr dptr, CUstream stream)
{
    const bool capturing = stream_is_capturing(stream);
    if (CUresult injected = count_call(name))
        return injected;
    std::lock_guard<std::mutex> lock(driver().mutex);
    if (capturing)
        return free_in_graph(dptr) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    auto it = driver().live.find(dptr);
    if (it == driver().live.end() || it->second.freeing)
        return CUDA_ERROR_INVALID_VALUE;
    it->second.freeing = true;
    it->second.stream = stream;
    return CUDA_SUCCESS;
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream)
{
    return free_async("cuMemFreeAsync", dptr, stream);
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream)
{
    return free_async("cuMemFreeAsync_ptsz", dptr, stream);
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *)
{
    return create_handle("cuMemPoolCreate", pool);
}
// The pool's memory goes once its queued frees are done, which the fake
// does now (it does not track which pool a block came from), except what
// an open export holds then (pool_releases_memory()).
CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    {
        std::lock_guard<std::mutex> lock(driver().mutex);
        complete_stream_frees(nullptr, true);
        pool_releases_memory();
    }
    return destroy_handle("cuMemPoolDestroy", pool);
}
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t)
{
    if (CUresult injected = count_call("cuMemPoolTrimTo"))
        return injected;
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(driver().mutex);
    pool_releases_memory();
    return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int)
{
    CUresult rc = alloc_common("cuMemAllocManaged", dptr, size, false);
    if (rc != CUDA_SUCCESS)
        return rc;
    std::lock_guard<std::mutex> lock(driver().mutex);
    driver().live[*dptr].managed = true;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocHost_v2(void **pp, size_t size)
{
    CUdeviceptr p = 0;
    CUresult rc = alloc_common("cuMemAllocHost_v2", &p, size, true);
    if (rc == CUDA_SUCCESS)
        *pp = reinterpret_cast<void *>(p);
    return rc;
}
CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int)
{
    CUdeviceptr p = 0;
    CUresult rc = alloc_common("cuMemHostAlloc", &p, size, true);
    if (rc == CUDA_SUCCESS)
        *pp = reinterpret_cast<void *>(p);
    return rc;
}
CUresult cuMemFreeHost(void *p)
{
    return free_common("cuMemFreeHost", reinterpret_cast<uintptr_t>(p));
}

static std::map<uintptr_t, size_t> &registered()
{
    return driver().registered;
}
static CUresult register_common(const char *name, void *p, size_t size)
{
    if (CUresult injected = count_call(name))
        return injected;
    if (!p || !size)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(driver().mutex);
    if (!registered().emplace(reinterpret_cast<uintptr_t>(p), size).second)
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    return CUDA_SUCCESS;
}
CUresult cuMemHostRegister(void *p, size_t size, unsigned int)
{
    return register_common("cuMemHostRegister", p, size);
}
CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned int)
{
    return register_common("cuMemHostRegister_v2", p, size);
}
CUresult cuMemHostUnregister(void *p)
{
    if (CUresult injected = count_call("cuMemHostUnregister"))
        return injected;
    std::lock_guard<std::mutex> lock(driver().mutex);
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    auto it = registered().find(addr);
    if (it == registered().end()) {
        // Inside a registered range but not its start: the H200's driver
        // (580.159.04) answers CUDA_ERROR_INVALID_VALUE, not "not registered".
        auto before = registered().upper_bound(addr);
        if (before != registered().begin() &&
            addr < std::prev(before)->first + std::prev(before)->second)
            return CUDA_ERROR_INVALID_VALUE;
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    }
    host_range_ends(it->first, it->second, false); // the program's pages stay
    registered().erase(it);
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr dptr)
{
    if (CUresult injected = count_call("cuMemGetAddressRange_v2"))
        return injected;
    std::lock_guard<std::mutex> lock(driver().mutex);
    uintptr_t found = 0;
    size_t found_size = 0;
    // A VMM mapping is its own range, as the H200's driver (580.159.04)
    // answers for an address inside one (not the reservation around it).
    bool known =
        host_alias_range(dptr, found, found_size) || mapping_containing(dptr, found, found_size);
    if (!known) {
        auto &live = driver().live;
        auto it = live.upper_bound(dptr);
        if (it != live.begin() && dptr < std::prev(it)->first + std::prev(it)->second.size) {
            found = std::prev(it)->first;
            found_size = std::prev(it)->second.size;
            known = true;
        }
    }
    if (!known)
        return CUDA_ERROR_NOT_FOUND;
    if (base)
        *base = found;
    if (size)
        *size = found_size;
    return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    if (CUresult injected = count_call("cuMemGetInfo_v2"))
        return injected;
    std::lock_guard<std::mutex> lock(driver().mutex);
    size_t used = 0;
    for (auto &entry : driver().live)
        if (!entry.second.host && backed(entry.second))
            used += entry.second.size;
    used += bytes_held_by_exports();
    const size_t total = size_t(80) << 30;
    if (free_bytes)
        *free_bytes = total - used;
    if (total_bytes)
        *total_bytes = total;
    return CUDA_SUCCESS;
}

static CUresult pointer_attribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    auto &live = driver().live;
    auto it = live.upper_bound(ptr);
    const bool in_allocation =
        it != live.begin() && ptr < std::prev(it)->first + std::prev(it)->second.size;
    if (!in_allocation) {
        // cuMemMap'ed memory: device memory of no pool, not for legacy IPC.
        if (!in_mapped_range(ptr, 1))
            return CUDA_ERROR_INVALID_VALUE;
        switch (attribute) {
        case CU_POINTER_ATTRIBUTE_BUFFER_ID: {
            auto mapping = std::prev(driver().mapped.upper_bound(ptr));
            *static_cast<unsigned long long *>(data) = driver().buffer_ids[mapping->first];
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *static_cast<unsigned int *>(data) = CU_MEMORYTYPE_DEVICE;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
            *static_cast<unsigned int *>(data) = 0;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
            *static_cast<void **>(data) = nullptr;
            return CUDA_SUCCESS;
        default: return CUDA_ERROR_NOT_SUPPORTED;
        }
    }
    const Allocation &a = std::prev(it)->second;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *static_cast<unsigned long long *>(data) = driver().buffer_ids[std::prev(it)->first];
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *static_cast<int *>(data) = a.context ? a.context->device : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *static_cast<CUcontext *>(data) = reinterpret_cast<CUcontext>(a.context);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *static_cast<CUdeviceptr *>(data) = std::prev(it)->first;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *static_cast<size_t *>(data) = a.size;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *static_cast<unsigned int *>(data) = a.managed;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned int *>(data) = a.host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: // as measured on an H100
        *static_cast<unsigned int *>(data) = !a.host && !a.managed && !a.pool;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *static_cast<void **>(data) = a.pool ? reinterpret_cast<void *>(&driver()) : nullptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: // 0 until set, as measured on an H200
        *static_cast<unsigned int *>(data) = a.sync_memops;
        return CUDA_SUCCESS;
    default: return CUDA_ERROR_NOT_SUPPORTED;
    }
}

// What the driver writes for each attribute: a pointer, a size_t or an
// unsigned long long for these, an int or unsigned int for the others.
static size_t pointer_attribute_bytes(CUpointer_attribute attribute)
{
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: return 8;
    default: return 4;
    }
}

static std::map<int, long> &attribute_queries()
{
    static std::map<int, long> queries; // under driver().mutex
    return queries;
}

static CUresult pointer_attribute_now(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    return pointer_attribute(data, attribute, ptr);
}

// Never fails for the memory's attributes: one it lacks, or an address the
// driver does not know, answers 0.
static CUresult pointer_attributes_now(unsigned int count, CUpointer_attribute *attributes,
                                       void **data, CUdeviceptr ptr)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    if (!attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < count; ++i) {
        if (!data[i])
            continue;
        if (pointer_attribute(data[i], attributes[i], ptr) != CUDA_SUCCESS)
            memset(data[i], 0, pointer_attribute_bytes(attributes[i]));
    }
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    if (CUresult injected = count_call("cuPointerGetAttribute"))
        return injected;
    CUresult rc;
    {
        std::lock_guard<std::mutex> lock(driver().mutex);
        ++attribute_queries()[attribute];
        rc = pointer_attribute_now(data, attribute, ptr);
    }
    wait_while_answers_held(); // answered, not yet returned
    return answer("cuPointerGetAttribute", rc);
}

void fake_cuda_renumber_buffer(CUdeviceptr ptr)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    driver().buffer_ids[ptr] = driver().next_buffer_id++;
}

long fake_cuda_attribute_queries(int attribute)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    return attribute_queries()[attribute];
}

CUresult fake_cuda_pointer_attribute_truth(void *data, CUpointer_attribute attribute,
                                           CUdeviceptr ptr)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    return pointer_attribute_now(data, attribute, ptr);
}

CUresult fake_cuda_pointer_attributes_truth(unsigned int count, CUpointer_attribute *attributes,
                                            void **data, CUdeviceptr ptr)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    return pointer_attributes_now(count, attributes, data, ptr);
}

CUresult cuPointerGetAttributes(unsigned int count, CUpointer_attribute *attributes, void **data,
                                CUdeviceptr ptr)
{
    if (CUresult injected = count_call("cuPointerGetAttributes"))
        return injected;
    std::lock_guard<std::mutex> lock(driver().mutex);
    for (unsigned int i = 0; attributes && data && i < count; ++i)
        ++attribute_queries()[attributes[i]];
    return answer("cuPointerGetAttributes", pointer_attributes_now(count, attributes, data, ptr));
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr dptr)
{
    if (CUresult injected = count_call("cuIpcGetMemHandle"))
        return injected;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    memset(handle, 0, sizeof(*handle));
    std::lock_guard<std::mutex> lock(driver().mutex);
    auto it = driver().live.find(dptr);
    if (it == driver().live.end())
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t size = it->second.size;
    memcpy(handle->reserved, &size, sizeof(size));
    return CUDA_SUCCESS;
}

// An imported handle maps as a new range of the exported allocation's size
// (the fake has no second process to share memory with).
static CUresult ipc_open(const char *name, CUdeviceptr *pdptr, CUipcMemHandle handle)
{
    uint64_t size = 0;
    memcpy(&size, handle.reserved, sizeof(size));
    if (!size)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_common(name, pdptr, size, false);
}
CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int)
{
    return ipc_open("cuIpcOpenMemHandle", pdptr, handle);
}
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int)
{
    return ipc_open("cuIpcOpenMemHandle_v2", pdptr, handle);
}
CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    return free_common("cuIpcCloseMemHandle", dptr);
}

} // extern "C"
