// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A test double of the shared CUDA runtime (libcudart.so.13), just large
// enough for the shim's runtime paths. Like the real runtime it loads
// libcuda with dlopen, finds cuGetProcAddress_v2 with dlsym and resolves
// every driver function through it.
#define CUDA_ENABLE_DEPRECATED 1
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>

extern "C" {
cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void *devPtr, cudaStream_t stream);
cudaError_t CUDARTAPI cudaStreamBeginCapture_ptsz(cudaStream_t stream,
                                                  enum cudaStreamCaptureMode mode);
cudaError_t CUDARTAPI cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *graph);
cudaError_t CUDARTAPI cudaGetDriverEntryPoint_ptsz(const char *, void **, unsigned long long,
                                                   enum cudaDriverEntryPointQueryResult *);
cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion_ptsz(const char *, void **, unsigned int,
                                                            unsigned long long,
                                                            enum cudaDriverEntryPointQueryResult *);
}

namespace {

constexpr int runtime_version = 13000;

// The driver's cuGetProcAddress_v2, found with dlsym as the real runtime
// finds it; with FAKECUDART_FIND_DRIVER=export_table in the driver's
// private table for its runtime (cuGetExportTable, fake_proc_address.cpp),
// which no interposer sees: every driver function this runtime calls is
// then the driver's own, as for a runtime that reaches the driver by a way
// the shim does not know, and only the shim's wrappers of the runtime's
// own calls see them.
decltype(&cuGetProcAddress_v2) get_proc_address()
{
    static decltype(&cuGetProcAddress_v2) found = [] {
        void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!driver)
            return decltype(&cuGetProcAddress_v2)(nullptr);
        const char *how = getenv("FAKECUDART_FIND_DRIVER");
        if (!how || strcmp(how, "export_table") != 0)
            return reinterpret_cast<decltype(&cuGetProcAddress_v2)>(
                dlsym(driver, "cuGetProcAddress_v2"));
        struct RuntimeTable {
            size_t size;
            decltype(&cuGetProcAddress_v2) get_proc_address;
        };
        static const CUuuid runtime_table_id = {
            {'f', 'a', 'k', 'e', 'c', 'u', 'd', 'a', 'r', 't', 'p', 'r', 'o', 'c', 's', '1'}};
        auto export_table =
            reinterpret_cast<decltype(&cuGetExportTable)>(dlsym(driver, "cuGetExportTable"));
        const void *table = nullptr;
        if (!export_table || export_table(&table, &runtime_table_id) != CUDA_SUCCESS)
            return decltype(&cuGetProcAddress_v2)(nullptr);
        return static_cast<const RuntimeTable *>(table)->get_proc_address;
    }();
    return found;
}

template <typename F> F driver_function(const char *base, bool per_thread = false)
{
    void *fn = nullptr;
    auto gpa = get_proc_address();
    if (gpa)
        gpa(base, &fn, runtime_version,
            per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, nullptr);
    return reinterpret_cast<F>(fn);
}

cudaError_t to_runtime(CUresult rc)
{
    switch (rc) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return cudaErrorStreamCaptureUnsupported;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return cudaErrorStreamCaptureInvalidated;
    default: return cudaErrorInvalidValue;
    }
}

// Stream capture through the driver function cuGetProcAddress answers,
// the per-thread-stream variant for the _ptsz entry points (where the
// handle 0 is the thread's default stream).
cudaError_t begin_capture(cudaStream_t stream, cudaStreamCaptureMode mode, bool per_thread)
{
    auto begin =
        driver_function<decltype(&cuStreamBeginCapture_v2)>("cuStreamBeginCapture", per_thread);
    return to_runtime(begin(reinterpret_cast<CUstream>(stream), CUstreamCaptureMode(mode)));
}

cudaError_t end_capture(cudaStream_t stream, cudaGraph_t *graph, bool per_thread)
{
    auto end = driver_function<decltype(&cuStreamEndCapture)>("cuStreamEndCapture", per_thread);
    return to_runtime(end(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUgraph *>(graph)));
}

thread_local int current_device = 0;

cudaError_t ensure_context()
{
    static std::once_flag once;
    static CUresult init_rc = CUDA_ERROR_NOT_INITIALIZED;
    std::call_once(once, [] {
        auto init = driver_function<decltype(&cuInit)>("cuInit");
        init_rc = init ? init(0) : CUDA_ERROR_NOT_INITIALIZED;
    });
    if (init_rc != CUDA_SUCCESS)
        return cudaErrorInitializationError;
    CUcontext current = nullptr;
    driver_function<decltype(&cuCtxGetCurrent)>("cuCtxGetCurrent")(&current);
    if (current)
        return cudaSuccess;
    CUcontext primary = nullptr;
    CUresult rc = driver_function<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain")(
        &primary, current_device);
    if (rc != CUDA_SUCCESS)
        return to_runtime(rc);
    return to_runtime(driver_function<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent")(primary));
}

} // namespace

extern "C" {

cudaError_t cudaSetDevice(int device)
{
    current_device = device;
    return ensure_context();
}

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    if (cudaError_t rc = ensure_context())
        return rc;
    CUdeviceptr p = 0;
    CUresult rc = driver_function<decltype(&cuMemAlloc_v2)>("cuMemAlloc")(&p, size);
    *devPtr = reinterpret_cast<void *>(p);
    return to_runtime(rc);
}

cudaError_t cudaFree(void *devPtr)
{
    if (!devPtr)
        return cudaSuccess; // as the real runtime: freeing null is a no-op
    return to_runtime(driver_function<decltype(&cuMemFree_v2)>("cuMemFree")(
        reinterpret_cast<CUdeviceptr>(devPtr)));
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t stream)
{
    if (cudaError_t rc = ensure_context())
        return rc;
    CUdeviceptr p = 0;
    CUresult rc = driver_function<decltype(&cuMemAllocAsync)>("cuMemAllocAsync")(
        &p, size, reinterpret_cast<CUstream>(stream));
    *devPtr = reinterpret_cast<void *>(p);
    return to_runtime(rc);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t stream)
{
    if (!devPtr)
        return cudaSuccess;
    return to_runtime(driver_function<decltype(&cuMemFreeAsync)>("cuMemFreeAsync")(
        reinterpret_cast<CUdeviceptr>(devPtr), reinterpret_cast<CUstream>(stream)));
}

cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t stream)
{
    if (!devPtr)
        return cudaSuccess;
    return to_runtime(driver_function<decltype(&cuMemFreeAsync_ptsz)>("cuMemFreeAsync", true)(
        reinterpret_cast<CUdeviceptr>(devPtr), reinterpret_cast<CUstream>(stream)));
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    return begin_capture(stream, mode, false);
}

cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    return begin_capture(stream, mode, true);
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
    return end_capture(stream, graph, false);
}

cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *graph)
{
    return end_capture(stream, graph, true);
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    if (cudaError_t rc = ensure_context())
        return rc;
    return to_runtime(driver_function<decltype(&cuMemAllocHost_v2)>("cuMemAllocHost")(ptr, size));
}

cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags)
{
    if (cudaError_t rc = ensure_context())
        return rc;
    return to_runtime(
        driver_function<decltype(&cuMemHostAlloc)>("cuMemHostAlloc")(ptr, size, flags));
}

cudaError_t cudaHostGetDevicePointer(void **device, void *host, unsigned int flags)
{
    if (!device)
        return cudaErrorInvalidValue;
    CUdeviceptr dptr = 0;
    cudaError_t rc = to_runtime(driver_function<decltype(&cuMemHostGetDevicePointer_v2)>(
        "cuMemHostGetDevicePointer")(&dptr, host, flags));
    if (rc == cudaSuccess)
        *device = reinterpret_cast<void *>(dptr);
    return rc;
}

cudaError_t cudaFreeHost(void *ptr)
{
    if (!ptr)
        return cudaSuccess;
    return to_runtime(driver_function<decltype(&cuMemFreeHost)>("cuMemFreeHost")(ptr));
}

cudaError_t cudaDeviceReset(void)
{
    return to_runtime(driver_function<decltype(&cuDevicePrimaryCtxReset_v2)>(
        "cuDevicePrimaryCtxReset")(current_device));
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *status)
{
    auto gpa = get_proc_address();
    if (!gpa)
        return cudaErrorInitializationError;
    CUdriverProcAddressQueryResult query = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult rc = gpa(symbol, funcPtr, static_cast<int>(cudaVersion), flags, &query);
    if (status)
        *status = query == CU_GET_PROC_ADDRESS_SUCCESS ? cudaDriverEntryPointSuccess
                                                       : cudaDriverEntryPointSymbolNotFound;
    return to_runtime(rc);
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *status)
{
    return cudaGetDriverEntryPointByVersion(symbol, funcPtr, runtime_version, flags, status);
}

cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
                                         unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *status)
{
    return cudaGetDriverEntryPointByVersion(symbol, funcPtr, runtime_version,
                                            flags | cudaEnablePerThreadDefaultStream, status);
}

cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
                                                  unsigned int cudaVersion,
                                                  unsigned long long flags,
                                                  enum cudaDriverEntryPointQueryResult *status)
{
    return cudaGetDriverEntryPointByVersion(symbol, funcPtr, cudaVersion,
                                            flags | cudaEnablePerThreadDefaultStream, status);
}

} // extern "C"
