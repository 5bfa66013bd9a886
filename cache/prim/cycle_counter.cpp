// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/prim/cycle_counter.h"

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace gdrhook {

#if defined(__x86_64__)
namespace {

bool tsc_is_invariant()
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx))
        return false;
    return edx & (1u << 8); // "Invariant TSC": constant rate, runs in deep C-states
}

} // namespace

// The kernel checks at boot (and keeps checking) that the TSC is synchronized
// across CPUs and stable; if it found otherwise it switched to another
// clocksource. Events stamped on different CPUs are compared, so trust the
// counter only where the kernel does.
bool cycle_counter_keeps_time(const char *kernel_clocksource)
{
    return tsc_is_invariant() && std::strcmp(kernel_clocksource, "tsc") == 0;
}
#else
// The generic timer: architecturally constant and synchronized (the header
// says why no check of /sys is needed; under qemu-user it would read the
// host's anyway). A firmware that left CNTFRQ_EL0 unset is the one case
// the counter cannot be converted.
bool cycle_counter_keeps_time(const char * /*kernel_clocksource*/)
{
    return cycle_counter_nominal_hz() != 0;
}
#endif

} // namespace gdrhook
