// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// include/gdrhook.h over a test cache.
#include "include/gdrhook.h"

#include "cache/core/public_api.h"
#include "fakes.h"

#include <catch2/catch.hpp>

#include <cerrno>

using namespace gdrhook;
using namespace gdrhook::testing;

TEST_CASE("the C API reports an inactive gdrhook and bad arguments", "[api]")
{
    set_public_cache_for_testing(nullptr);
    gdrhook_registration reg{};
    int x = 0;
    REQUIRE(gdrhook_get(&x, 4, &reg) == -ENODEV);
    REQUIRE(gdrhook_get(nullptr, 4, &reg) == -EINVAL);
    gdrhook_stats stats;
    REQUIRE(gdrhook_get_stats(&stats, sizeof(stats)) == -ENODEV);
    REQUIRE(gdrhook_api_version() == GDRHOOK_API_VERSION);
}

TEST_CASE("gdrhook_get and gdrhook_put hold a registration across a free", "[api]")
{
    Fixture f;
    set_public_cache_for_testing(f.cache.get());
    f.memory.allocate(0x500000000, 2 * MiB);
    const void *ptr = reinterpret_cast<const void *>(uintptr_t(0x500000000 + 12345));

    gdrhook_registration reg;
    REQUIRE(gdrhook_get(ptr, 100, &reg) == 0);
    REQUIRE(reg.base == 0x500000000);
    REQUIRE(reg.length == 2 * MiB);
    REQUIRE(reg.dmabuf_offset == 12345);
    REQUIRE(reg.kind == GDRHOOK_REG_KMOD); // the fake backend hands out handles
    REQUIRE(reg.kmod_handle != 0);

    f.cache->invalidate(0x500000000, 2 * MiB);
    f.drain();
    REQUIRE(f.backend->is_live(reg.kmod_handle));
    REQUIRE(gdrhook_put(&reg) == 0);
    REQUIRE(gdrhook_put(&reg) == -EINVAL); // already released
    f.drain();
    REQUIRE_FALSE(f.backend->is_live(reg.kmod_handle));

    gdrhook_stats stats;
    REQUIRE(gdrhook_get_stats(&stats, sizeof(stats)) == 0);
    REQUIRE(stats.pins == 1);
    REQUIRE(stats.unpins == 1);
    REQUIRE(stats.invalidated == 1);
    // An older, smaller struct gets its prefix only.
    uint64_t prefix[2] = {~0ull, ~0ull};
    REQUIRE(gdrhook_get_stats(reinterpret_cast<gdrhook_stats *>(prefix), 8) == 0);
    REQUIRE(prefix[1] == ~0ull);
    set_public_cache_for_testing(nullptr);
}
