// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The lookup goals of docs/performance.md, measured side by side.
//
// A goal compares points of the sweep: gdrhook.lookup's 16 threads against
// the tag check's 16 threads, its 16 threads against its one. On a shared
// machine the speed of the CPUs drifts within seconds (on the GPU machine a
// one-thread hot hit's median was 6.63 ns in one run and 3.40 ns in the
// same binary's next run), and the sweep measures the two points of a
// ratio up to a minute apart. So the goals are
// measured again in rounds: each round measures every point the goals
// compare back to back, at the largest entry count (half the rounds in
// reverse order), and each goal's value is the median of its per-round
// values. The rounds' values are reported too.
#pragma once

#include "lookup_bench.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bench {

struct Target {
    std::string name;
    std::string what;
    std::optional<double> value;
    const char *relation; // ">=" or "<="
    double goal;
    std::vector<double> rounds; // the value in each round, where measured in rounds
    // The core gdrhook.lookup's point ran on (its one thread, or its many
    // for the goals that compare those): the goal's own, and each round's.
    // A hit's ns moves with the share of its core the host leaves it.
    std::optional<CoreClock> core;
    std::vector<CoreClock> round_cores;

    std::optional<bool> met() const
    {
        if (!value)
            return std::nullopt;
        return relation[0] == '>' ? *value >= goal : *value <= goal;
    }
};

// A goal with the value this run found (none: not measured) and, for a
// lookup goal, the core gdrhook.lookup's point ran on.
Target make_target(std::string name, std::string what, std::optional<double> value,
                   const char *relation, double goal, std::optional<CoreClock> core = std::nullopt);

// A cache kept warm at the largest entry count, with the buffers it holds.
struct KeptCache {
    std::unique_ptr<LookupCache> cache;
    const std::vector<Buffer> *buffers;
};

// The lookup goals from one set of points (a sweep, or one round).
std::vector<Target> lookup_targets(const std::vector<LookupResult> &points, size_t entries,
                                   int threads);

// `rounds` rounds of the points lookup_targets compares, over the caches
// given (those absent leave their goals without a value); each goal is the
// median of its rounds.
std::vector<Target> lookup_targets_in_rounds(const std::vector<KeptCache> &caches,
                                             const std::vector<Pattern> &patterns, size_t entries,
                                             int threads, int rounds, double seconds);

} // namespace bench
