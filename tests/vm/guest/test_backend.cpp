// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_backend.cpp - the cache's kmod backend (cache/backends/kmod_backend.cpp, linked
// in as is) against the real module: revocations the provider causes reach
// take_revocations() once each, poll() on revocation_fd() signals them, a
// record for a handle already unpinned is ignored, and when the module's
// event queue overflows the backend still reports every revoked handle.
#include "common.hpp"

#include "cache/backends/kmod_backend.h"

#include <algorithm>
#include <poll.h>
#include <set>

namespace vmtest {
namespace {

using gdrhook::KmodBackend;
using gdrhook::Pin;

bool readable(int fd)
{
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

std::set<uint64_t> take(KmodBackend &b)
{
    std::vector<uint64_t> got;
    const size_t n = b.take_revocations(got);
    CHECK(n == got.size());
    std::set<uint64_t> s(got.begin(), got.end());
    CHECK(s.size() == got.size()); // each handle once
    return s;
}

} // namespace

int test_backend()
{
    KmodBackend b;
    CHECK(b.open(GDRHOOK_DEVICE_PATH).ok());
    CHECK(b.revocation_fd() >= 0);
    Provider tp;
    CHECK(tp.ok());
    constexpr size_t kChunks = 64;
    HostBuffer buf(kChunks * kGpuPage);

    std::vector<Pin> pins(kChunks);
    for (size_t i = 0; i < kChunks; i++)
        CHECK(
            b.pin(reinterpret_cast<uintptr_t>(buf.data() + i * kGpuPage), kGpuPage, pins[i]).ok());
    CHECK(gdr_counter("pins_live") == kChunks);
    CHECK(take(b).empty());
    CHECK(!readable(b.revocation_fd()));

    // The "driver" frees chunks 0..9: ten revocations, reported once.
    uint32_t fired = 0;
    CHECK_OK(tp.fire(buf.data(), 10 * kGpuPage, &fired));
    CHECK(fired == 10);
    CHECK(readable(b.revocation_fd()));
    std::set<uint64_t> want;
    for (size_t i = 0; i < 10; i++)
        want.insert(pins[i].handle);
    CHECK(take(b) == want);
    CHECK(!readable(b.revocation_fd()));
    CHECK(take(b).empty());
    CHECK(b.unpin(pins.data(), 10).ok()); // revoked pins still need their unpin
    CHECK(gdr_counter("pins_live") == kChunks - 10);

    // Revoked, then unpinned before the worker looked: nothing to report.
    CHECK_OK(tp.fire(buf.data() + 10 * kGpuPage, kGpuPage, &fired));
    CHECK(fired == 1);
    CHECK(b.unpin(&pins[10], 1).ok());
    CHECK(take(b).empty());

    // More revocations than the module's queue holds (1024): the OVERFLOW
    // record makes the backend QUERY what it holds; every revoked handle is
    // still reported, once, and none of the live ones.
    const char *chunk = buf.data() + 11 * kGpuPage;
    std::vector<Pin> many(1100);
    want.clear();
    for (auto &p : many) {
        CHECK(b.pin(reinterpret_cast<uintptr_t>(chunk), kGpuPage, p).ok());
        want.insert(p.handle);
    }
    const uint64_t dropped0 = gdr_counter("events_dropped");
    CHECK_OK(tp.fire(chunk, kGpuPage, &fired));
    CHECK(fired == many.size() + 1); // and pins[11]
    want.insert(pins[11].handle);
    CHECK(gdr_counter("events_dropped") - dropped0 == fired - 1024);
    CHECK(take(b) == want);
    CHECK(take(b).empty());
    CHECK(b.unpin(many.data(), many.size()).ok());
    CHECK(b.unpin(pins.data() + 11, kChunks - 11).ok());
    CHECK(gdr_counter("pins_live") == 0);
    CHECK(take(b).empty());
    std::printf(
        "backend: %zu revocations reported through take_revocations (1,101 across an overflow)\n",
        want.size() + 11);
    return 0;
}

} // namespace vmtest
