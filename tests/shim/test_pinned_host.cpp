// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Page-locked host memory under pin-on-alloc: pinned through dma-buf where
// the device reports CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED (the
// fake driver with FAKECUDA_HOST_DMABUF=1), freed with an unpin; a skip
// with its reason where it does not (tests/programs/pinned_host.cpp).
#include "program_runs.h"

namespace {

std::vector<EventLine> run_pinned_host(bool host_dmabuf)
{
    const std::map<std::string, std::string> device = {
        {"FAKECUDA_HOST_DMABUF", host_dmabuf ? "1" : "0"}};
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult plain = run_test_program("GDRHOOKTEST_PINNED_HOST", {}, log, false, device);
    INFO(plain.output);
    REQUIRE(plain.exit_status == 0);
    CHECK(output_field(plain.output, "host_alloc_dma_buf") == host_dmabuf);
    RunResult run = run_test_program("GDRHOOKTEST_PINNED_HOST", {}, log, true, device);
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    std::vector<EventLine> events = read_recorded_events(log);
    check_no_error_events(events);
    check_every_pin_released_by_a_free(events);
    CHECK(count_events(events, "free") == size_t(output_field(run.output, "frees_made")));
    return events;
}

std::map<std::string, size_t> skips_by_reason(const std::vector<EventLine> &events)
{
    std::map<std::string, size_t> reasons;
    for (const EventLine &e : events)
        if (e["ev"] == "skip")
            ++reasons[e["reason"]];
    return reasons;
}

} // namespace

TEST_CASE("with host dma-buf support, cuMemHostAlloc and cuMemAllocHost memory is pinned, "
          "and its free unpins it")
{
    std::vector<EventLine> events = run_pinned_host(true);
    std::vector<std::string> pinned;
    for (const EventLine &e : events)
        if (e["ev"] == "pin") {
            pinned.push_back(e["api"]);
            CHECK(e["kind"] == "host");
        }
    CHECK(pinned == std::vector<std::string>{"cuMemHostAlloc", "cuMemAllocHost_v2"});
    // Registered memory is the program's own: the driver does not export it.
    CHECK(skips_by_reason(events) == std::map<std::string, size_t>{{"host", 1}});
}

TEST_CASE("without host dma-buf support, pinned host memory is a skip with its reason")
{
    std::vector<EventLine> events = run_pinned_host(false);
    CHECK(count_events(events, "pin") == 0);
    CHECK(skips_by_reason(events) == std::map<std::string, size_t>{{"host", 3}});
}
