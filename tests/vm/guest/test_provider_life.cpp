// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_provider_life.cpp - gdrhook.ko and the nv-p2p provider (nvidia.ko,
// here the test provider) come and go independently: the provider can be
// unloaded (a driver upgrade or reset) whenever no nv-p2p pin is held,
// gdrhook reports nv-p2p absent then and refuses nv-p2p PINs, and picks the
// provider up again when it is loaded later. The init script leaves the
// provider loaded for the steps after this one.
#include "common.hpp"

namespace vmtest {
namespace {

uint32_t features(const Gdrhook &dev)
{
    gdrhook_ioc_version v{};
    CHECK_OK(dev.version(&v));
    return v.features;
}

void check_provider_comes_and_goes()
{
    Gdrhook dev;
    HostBuffer buf(kGpuPage);
    CHECK(dev.ok());
    CHECK(features(dev) & GDRHOOK_FEATURE_NVP2P);
    uint64_t h;
    CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h));
    // A pin holds the provider: unloading it now would pull pages from
    // under a peer.
    const int busy = unload_module("gdrhook_tp");
    CHECK_OK(dev.unpin(h));
    const int idle = unload_module("gdrhook_tp");
    std::printf("provider_life: rmmod of the provider: %s with a pin, %s without\n",
                busy ? "refused" : "ACCEPTED", idle ? "REFUSED" : "accepted");
    CHECK(busy != 0);
    CHECK(idle == 0);

    // Absent.
    CHECK(!(features(dev) & GDRHOOK_FEATURE_NVP2P));
    CHECK_ERR(dev.pin_nvp2p(buf.data(), kGpuPage, &h), EOPNOTSUPP);

    // Loaded after gdrhook.
    CHECK(load_module("gdrhook_tp") == 0);
    CHECK(features(dev) & GDRHOOK_FEATURE_NVP2P);
    CHECK_OK(dev.pin_nvp2p(buf.data(), kGpuPage, &h));
    CHECK_OK(dev.unpin(h));
}

} // namespace

int test_provider_life()
{
    check_provider_comes_and_goes();
    check_no_leaks("provider_life");
    return 0;
}

} // namespace vmtest
