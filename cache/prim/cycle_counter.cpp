// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/prim/cycle_counter.h"

#include "cache/base/safe_file.h"

#include <cstdio>
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

// The kernel checks at boot (and keeps checking) that the TSC is synchronized
// across CPUs and stable; if it found otherwise it switched to another
// clocksource. Events stamped on different CPUs are compared, so trust the
// counter only where the kernel does.
bool kernel_keeps_time_with_tsc()
{
    std::string name;
    return read_small_file("/sys/devices/system/clocksource/clocksource0/current_clocksource", name,
                           32)
               .empty() &&
           name == "tsc\n";
}

} // namespace

bool cycle_counter_keeps_time()
{
    return tsc_is_invariant() && kernel_keeps_time_with_tsc();
}
#else
// The generic timer: architecturally constant and synchronized (the header
// says why no check of /sys is needed; under qemu-user it would read the
// host's anyway). A firmware that left CNTFRQ_EL0 unset is the one case
// the counter cannot be converted.
bool cycle_counter_keeps_time()
{
    return cycle_counter_nominal_hz() != 0;
}
#endif

} // namespace gdrhook
