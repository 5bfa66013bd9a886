// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// dma-buf export in the fake driver: cuMemGetHandleForAddressRange with
// CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD hands out a memfd that stands for the
// dma-buf. As with the real driver (docs/design.md, "dma-buf leak"), memory
// freed while an export of it is open stays allocated, and cuMemGetInfo
// counts it, until every fd of it is closed.
#include "fake_state.h"

#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <map>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

using namespace fake;

namespace {

// A file's identity: its file system and its inode number there. The
// number alone is not one: a pipe's number (pipefs) can be a memfd's
// (shmem) too, each file system counting its own (test_export_identity.cpp).
using FileId = std::pair<dev_t, ino_t>;

FileId file_id(const struct stat &st)
{
    return {st.st_dev, st.st_ino};
}

struct Export {
    FileId file;    // the export, whatever number its holder gives it
    uintptr_t base; // the allocation exported
    size_t size;
    bool host; // pinned host memory: not what cuMemGetInfo counts
    bool pool; // stream-ordered memory, a pool's
};
std::vector<Export> exports; // driver().mutex

// Freed pool memory an export held when its pool was trimmed or destroyed:
// base -> size (driver().mutex).
std::map<uintptr_t, size_t> kept_by_pools;

// The files the process has open, its exports among them, whatever
// numbers they have now: the holder may have moved one (F_DUPFD and close,
// as gdrhook does to keep out of the program's numbers), and a number may
// name another file since.
std::set<FileId> open_files()
{
    std::set<FileId> open;
    DIR *dir = opendir("/proc/self/fd");
    if (!dir)
        return open;
    while (dirent *entry = readdir(dir)) {
        struct stat st;
        if (entry->d_name[0] != '.' && fstatat(dirfd(dir), entry->d_name, &st, 0) == 0)
            open.insert(file_id(st));
    }
    closedir(dir);
    return open;
}

} // namespace

namespace fake {

size_t bytes_held_by_exports()
{
    // Drop the exports whose fd was closed; count each freed allocation
    // that an open export still holds once.
    const std::set<FileId> files = open_files();
    std::vector<Export> open;
    std::vector<uintptr_t> counted;
    size_t held = 0;
    for (const Export &e : exports) {
        if (!files.count(e.file))
            continue;
        open.push_back(e);
        // Graph memory a trim or a destroyed executable graph unmapped is
        // given back, as freed memory is, once nothing exports it.
        auto live = driver().live.find(e.base);
        bool freed = (live == driver().live.end() || !backed(live->second)) &&
                     !in_mapped_range(e.base, e.size) && !e.host;
        bool seen = std::find(counted.begin(), counted.end(), e.base) != counted.end();
        if (freed && !seen) {
            counted.push_back(e.base);
            held += e.size;
        }
    }
    exports.swap(open);
    for (const auto &[base, size] : kept_by_pools)
        if (std::find(counted.begin(), counted.end(), base) == counted.end())
            held += size;
    return held;
}

void pool_releases_memory()
{
    kept_by_pools.clear();
    const std::set<FileId> files = open_files();
    for (const Export &e : exports)
        if (e.pool && files.count(e.file) && driver().live.find(e.base) == driver().live.end())
            kept_by_pools[e.base] = e.size;
}

bool mapping_containing(uintptr_t ptr, uintptr_t &start, size_t &size)
{
    auto &mapped = driver().mapped;
    auto it = mapped.upper_bound(ptr);
    if (it == mapped.begin())
        return false;
    --it;
    if (ptr >= it->first + it->second)
        return false;
    start = it->first;
    size = it->second;
    return true;
}

bool in_mapped_range(uintptr_t ptr, size_t size)
{
    uintptr_t start = 0;
    size_t length = 0;
    return mapping_containing(ptr, start, length) && ptr + size <= start + length;
}

} // namespace fake

extern "C" {

static CUresult export_range(void *handle, CUdeviceptr dptr, size_t size, CUmemRangeHandleType type,
                             unsigned long long flags)
{
    if (!handle || type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags || !size ||
        (dptr | size) % 4096)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(driver().mutex);
    // Compressible VMM memory refuses export with an unknown error.
    auto comp = driver().compressible_mapped.upper_bound(dptr);
    if (comp != driver().compressible_mapped.begin() &&
        dptr < std::prev(comp)->first + std::prev(comp)->second)
        return CUDA_ERROR_UNKNOWN;
    if (in_mapped_range(dptr, size)) { // VMM memory exports, as on the real driver
        int fd = memfd_create("fake-dmabuf", MFD_CLOEXEC);
        if (fd < 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
        struct stat st;
        fstat(fd, &st);
        exports.push_back(Export{file_id(st), dptr, size, false, false});
        *static_cast<int *>(handle) = fd;
        return CUDA_SUCCESS;
    }
    auto &live = driver().live;
    auto it = live.upper_bound(dptr);
    if (it == live.begin())
        return CUDA_ERROR_INVALID_VALUE;
    --it;
    // Graph memory no launch has mapped, and stream-ordered memory its
    // stream has not passed, are "not an allocated range".
    if (!backed(it->second) || it->second.pending)
        return CUDA_ERROR_INVALID_VALUE;
    if (it->second.host && !host_dmabuf_supported())
        return CUDA_ERROR_INVALID_VALUE;
    // Managed memory migrates between host and device: no dma-buf of it.
    if (it->second.managed)
        return CUDA_ERROR_NOT_SUPPORTED;
    const size_t rounded = (it->second.size + 4095) & ~size_t(4095);
    if (dptr + size > it->first + rounded)
        return CUDA_ERROR_INVALID_VALUE; // past the allocation's end, as the driver
    int fd = memfd_create("fake-dmabuf", MFD_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct stat st;
    fstat(fd, &st);
    exports.push_back(
        Export{file_id(st), it->first, it->second.size, it->second.host, it->second.pool});
    *static_cast<int *>(handle) = fd;
    return CUDA_SUCCESS;
}

// FAKECUDA_EXPORT_DELAY_US=N: each export takes N us more, as a real
// driver's can take a while, so that a test can tell an event stamped as
// the pin began from one stamped as it ended.
static void export_delay()
{
    static const long delay_us = [] {
        const char *value = getenv("FAKECUDA_EXPORT_DELAY_US");
        return value ? strtol(value, nullptr, 10) : 0L;
    }();
    if (delay_us > 0)
        usleep(static_cast<useconds_t>(delay_us));
}

CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size,
                                       CUmemRangeHandleType type, unsigned long long flags)
{
    if (CUresult injected = count_call("cuMemGetHandleForAddressRange"))
        return injected;
    export_delay();
    return answer("cuMemGetHandleForAddressRange", export_range(handle, dptr, size, type, flags));
}

static CUresult set_pointer_attribute(const void *value, CUpointer_attribute attribute,
                                      CUdeviceptr ptr)
{
    if (attribute == CU_POINTER_ATTRIBUTE_SYNC_MEMOPS && capture_prohibits_unsafe_call())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (!value || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(driver().mutex);
    // The real driver answers NOT_SUPPORTED for cuMemMap'ed ranges
    // (measured on an H100, driver 580), compressible or not.
    if (in_mapped_range(ptr, 1))
        return CUDA_ERROR_NOT_SUPPORTED;
    auto &live = driver().live;
    auto it = live.upper_bound(ptr);
    if (it == live.begin() || ptr >= std::prev(it)->first + std::prev(it)->second.size)
        return CUDA_ERROR_INVALID_VALUE;
    // An attribute of device memory; the fake refuses it on host memory,
    // so that a pin of pinned host memory must not depend on it.
    Allocation &a = std::prev(it)->second;
    if (a.host)
        return CUDA_ERROR_INVALID_VALUE;
    a.sync_memops = *static_cast<const unsigned int *>(value) != 0;
    return CUDA_SUCCESS;
}

CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    if (CUresult injected = count_call("cuPointerSetAttribute"))
        return injected;
    return answer("cuPointerSetAttribute", set_pointer_attribute(value, attribute, ptr));
}

} // extern "C"
