// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "core_clock.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace bench {

namespace {

constexpr uint64_t adds_per_iteration = 16;
constexpr uint64_t iterations = uint64_t(1) << 16; // 2^20 adds: ~0.3 ms at 3.5 GHz
constexpr int passes = 5;

// One chain: each add needs the one before it.
uint64_t dependent_adds(uint64_t value)
{
    for (uint64_t i = 0; i < iterations; ++i) {
#if defined(__x86_64__)
        asm volatile(".rept 16\n\taddq %0, %0\n\t.endr" : "+r"(value));
#elif defined(__aarch64__)
        asm volatile(".rept 16\n\tadd %0, %0, %0\n\t.endr" : "+r"(value));
#endif
    }
    return value;
}

// Eight chains side by side, two adds each an iteration: as many adds,
// bound by the core's integer units instead of their latency.
uint64_t independent_adds(uint64_t value)
{
    uint64_t a = value, b = value + 1, c = value + 2, d = value + 3, e = value + 4, f = value + 5,
             g = value + 6, h = value + 7;
    for (uint64_t i = 0; i < iterations; ++i) {
#if defined(__x86_64__)
        asm volatile(".rept 2\n\taddq %0, %0\n\taddq %1, %1\n\taddq %2, %2\n\taddq %3, %3\n\t"
                     "addq %4, %4\n\taddq %5, %5\n\taddq %6, %6\n\taddq %7, %7\n\t.endr"
                     : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f), "+r"(g), "+r"(h));
#elif defined(__aarch64__)
        asm volatile(".rept 2\n\tadd %0, %0, %0\n\tadd %1, %1, %1\n\tadd %2, %2, %2\n\t"
                     "add %3, %3, %3\n\tadd %4, %4, %4\n\tadd %5, %5, %5\n\tadd %6, %6, %6\n\t"
                     "add %7, %7, %7\n\t.endr"
                     : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f), "+r"(g), "+r"(h));
#endif
    }
    return a ^ b ^ c ^ d ^ e ^ f ^ g ^ h;
}

// The most adds per nanosecond of `passes` runs of `adds`.
double best_adds_per_ns(uint64_t (*adds)(uint64_t))
{
    using clock = std::chrono::steady_clock;
    double best = 0;
    uint64_t keep = 1;
    for (int pass = 0; pass < passes; ++pass) {
        const auto begin = clock::now();
        keep = adds(keep | 1);
        const double ns = std::chrono::duration<double, std::nano>(clock::now() - begin).count();
        if (ns > 0)
            best = std::max(best, double(iterations * adds_per_iteration) / ns);
    }
    asm volatile("" : : "r"(keep));
    return best;
}

} // namespace

CoreClock core_clock()
{
    CoreClock out;
#if defined(__x86_64__) || defined(__aarch64__)
    out.ghz = best_adds_per_ns(dependent_adds);
    if (out.ghz > 0)
        out.adds_per_cycle = best_adds_per_ns(independent_adds) / out.ghz;
#endif
    return out;
}

} // namespace bench
