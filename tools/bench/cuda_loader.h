// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The CUDA driver, found at run time with dlopen("libcuda.so.1"): the real
// one on a GPU machine, the fake one from tests/fake_driver in CI (point
// LD_LIBRARY_PATH at it). The benchmark never links libcuda, so one binary
// runs on both.
#pragma once

#include "cache/base/driver_api.h"
#include "cache/base/result.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace bench {

struct Cuda {
    bool loaded = false;
    bool context = false; // a current context: allocations work
    int (*mem_alloc)(unsigned long long *, size_t) = nullptr;
    int (*mem_free)(unsigned long long) = nullptr;
    int (*pointer_get_attribute)(void *, int, unsigned long long) = nullptr;
    int (*mem_get_info)(size_t *, size_t *) = nullptr;
    gdrhook::DriverApi api; // for the dma-buf backend
    std::string device_name;

    // dlopen + cuInit + the primary context of device 0. A failure keeps
    // what was found (`loaded`, the symbols) without a context.
    static gdrhook::Result<Cuda> open();
};

} // namespace bench
