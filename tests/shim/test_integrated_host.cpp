// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Host memory on an integrated GPU (the fake driver's integrated mode,
// FAKECUDA_INTEGRATED=1, whose cudaHostGetDevicePointer answers another
// address for the same bytes; tests/programs/integrated_host.cpp): under
// pin-on-alloc the allocation is pinned once, at cudaHostAlloc, and
// gdrhook_get() by its host address, its device address or an interior
// device address hits that one registration, with base told in the
// address asked with; after cudaFreeHost the device address resolves to
// nothing, at any offset, though the host address was handed out again
// and another allocation's device address is noted. No module here: host memory pins through dma-buf
// (FAKECUDA_HOST_DMABUF=1), and `auto` says why it did not take
// pin_user_pages. The module's pin_user_pages backend under the shim is
// the kmod suite's `integrated` step (tests/vm).
#include "program_runs.h"

namespace {

CheckedRun run_integrated_host(bool integrated)
{
    return run_checked("GDRHOOKTEST_INTEGRATED_HOST",
                       {{"FAKECUDA_INTEGRATED", integrated ? "1" : "0"},
                        {"FAKECUDA_HOST_DMABUF", "1"},
                        {"GDRHOOK_BACKEND", "auto"},
                        {"GDRHOOK_LOG_LEVEL", "info"}});
}

void check_one_registration(const RunResult &run)
{
    INFO(run.output);
    CHECK(output_field(run.output, "get_host") == 0);
    CHECK(output_field(run.output, "get_device") == 0);
    CHECK(output_field(run.output, "get_interior") == 0);
    CHECK(output_field(run.output, "same_registration") == 1);
    CHECK(output_field(run.output, "device_base_matches") == 1);
    // Pinned at cudaHostAlloc: the three gets are hits.
    CHECK(output_field(run.output, "pins_during") == 0);
    CHECK(output_field(run.output, "misses_during") == 0);
}

} // namespace

TEST_CASE("on an integrated GPU, a lookup by the host or the device address of host memory "
          "hits its one registration")
{
    CheckedRun r = run_integrated_host(true);
    INFO(r.run.output);
    CHECK(output_field(r.run.output, "integrated") == 1);
    CHECK(output_field(r.run.output, "device_differs") == 1);
    check_one_registration(r.run);
    // The device address meant the allocation only while it lived, and
    // only inside it: its end is no byte of it, though the pinned range
    // (whole pages) holds the host byte at the same offset.
    // After its free no alias of it is found at any offset, though its host
    // address is memory again and another allocation's alias is noted.
    CHECK(output_field(r.run.output, "host_address_reused") == 1);
    CHECK(output_field(r.run.output, "get_after_free_0") != 0);
    CHECK(output_field(r.run.output, "get_after_free_1") != 0);
    CHECK(output_field(r.run.output, "get_after_free_2") != 0);
    CHECK(output_field(r.run.output, "get_other_alias") == 0);
    CHECK(output_field(r.run.output, "get_last_byte") == 0);
    CHECK(output_field(r.run.output, "get_device_end") != 0);
    CHECK(count_events(r.events, "pin") == 3); // one per allocation, at cudaHostAlloc
    // No module: auto says the GPU is integrated and why pin_user_pages is out.
    CHECK(r.run.output.find("the GPU is integrated but") != std::string::npos);
}

TEST_CASE("on a discrete GPU, host memory's device address is its host address")
{
    CheckedRun r = run_integrated_host(false);
    INFO(r.run.output);
    CHECK(output_field(r.run.output, "integrated") == 0);
    CHECK(output_field(r.run.output, "device_differs") == 0);
    check_one_registration(r.run);
    CHECK(r.run.output.find("the GPU is integrated") == std::string::npos);
}
