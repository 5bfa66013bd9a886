// SPDX-License-Identifier: MIT OR GPL-2.0-only
// A stand-in for libnvidia-ml.so.1 with the few calls `gdrhook node` makes
// (tools/cli/doctor/doctor_nvml.cpp), so that its GPU series can be tested
// on a machine without a GPU. Any bus id is a GPU whose BAR1 is 256 GiB,
// of which (its bus number) MiB are used: each GPU's figures tell which
// GPU they came from.
#include <stdio.h>
#include <string.h>

#define FAKE_BAR1_TOTAL (256ULL << 30)

struct fake_bar1 {
    unsigned long long total, free, used;
};

int nvmlInit_v2(void)
{
    return 0;
}
int nvmlShutdown(void)
{
    return 0;
}
const char *nvmlErrorString(int rc)
{
    return rc ? "fake NVML error" : "success";
}

int nvmlSystemGetDriverVersion(char *text, unsigned int size)
{
    snprintf(text, size, "%s", "999.99");
    return 0;
}

// The handle is the bus number plus one (never NULL).
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, void **device)
{
    unsigned domain = 0, bus = 0, slot = 0, function = 0;
    if (sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4)
        return 2; // NVML_ERROR_INVALID_ARGUMENT
    *device = (void *)(unsigned long)(bus + 1);
    return 0;
}

int nvmlDeviceGetBAR1MemoryInfo(void *device, struct fake_bar1 *memory)
{
    const unsigned long long used = ((unsigned long)device - 1) << 20;
    memory->total = FAKE_BAR1_TOTAL;
    memory->used = used;
    memory->free = FAKE_BAR1_TOTAL - used;
    return 0;
}
