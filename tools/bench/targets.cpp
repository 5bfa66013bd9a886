// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "targets.h"

#include "median.h"

#include <algorithm>

namespace bench {
namespace {

const LookupResult *find(const std::vector<LookupResult> &all, const std::string &cache,
                         Pattern pattern, size_t entries, int threads)
{
    for (const LookupResult &r : all)
        if (r.cache == cache && r.pattern == pattern && r.entries == entries &&
            r.threads == threads && r.misses == 0)
            return &r;
    return nullptr;
}

// The points the goals compare, one cache's at a time.
struct Point {
    const char *cache;
    Pattern pattern;
    bool many_threads;
};
constexpr Point compared_points[] = {
    {"gdrhook.lookup", Pattern::hot, false},    {"gdrhook.lookup", Pattern::hot, true},
    {"tagcheck", Pattern::hot, false},          {"tagcheck", Pattern::hot, true},
    {"gdrhook.lookup", Pattern::random, false}, {"gdrhook.lookup", Pattern::random, true},
    {"ucs_rcache", Pattern::hot, false},        {"ucs_rcache", Pattern::random, false},
};

} // namespace

Target make_target(std::string name, std::string what, std::optional<double> value,
                   const char *relation, double goal, std::optional<CoreClock> core)
{
    Target t;
    t.name = std::move(name);
    t.what = std::move(what);
    t.value = value;
    t.relation = relation;
    t.goal = goal;
    t.core = core;
    return t;
}

std::vector<Target> lookup_targets(const std::vector<LookupResult> &points, size_t entries,
                                   int threads)
{
    auto median = [&](const char *cache, Pattern p) -> std::optional<double> {
        const LookupResult *r = find(points, cache, p, entries, 1);
        if (!r || r->median_ns <= 0)
            return std::nullopt;
        return r->median_ns;
    };
    auto ratio = [&](const char *other, Pattern p) -> std::optional<double> {
        auto ours = median("gdrhook.lookup", p), theirs = median(other, p);
        if (!ours || !theirs)
            return std::nullopt;
        return *theirs / *ours;
    };
    auto scaling = [&](Pattern p) -> std::optional<double> {
        const LookupResult *one = find(points, "gdrhook.lookup", p, entries, 1);
        const LookupResult *many = find(points, "gdrhook.lookup", p, entries, threads);
        if (!one || !many || threads == 1 || one->mhits_per_s <= 0)
            return std::nullopt;
        return many->mhits_per_s / one->mhits_per_s;
    };
    auto throughput_ratio = [&](const char *other, Pattern p) -> std::optional<double> {
        const LookupResult *ours = find(points, "gdrhook.lookup", p, entries, threads);
        const LookupResult *theirs = find(points, other, p, entries, threads);
        if (!ours || !theirs || theirs->mhits_per_s <= 0)
            return std::nullopt;
        return ours->mhits_per_s / theirs->mhits_per_s;
    };
    auto core = [&](Pattern p, bool many) -> std::optional<CoreClock> {
        const LookupResult *r = find(points, "gdrhook.lookup", p, entries, many ? threads : 1);
        if (!r)
            return std::nullopt;
        return r->core;
    };
    std::string at = std::to_string(entries) + " entries";
    std::string many = std::to_string(threads) + " threads";
    return {
        make_target("hot_median_ns", "gdrhook.lookup hot median, 1 thread, " + at,
                    median("gdrhook.lookup", Pattern::hot), "<=", 3, core(Pattern::hot, false)),
        make_target("hot_threads_vs_tagcheck",
                    "gdrhook.lookup / tagcheck hot throughput, " + many + " each, " + at,
                    throughput_ratio("tagcheck", Pattern::hot), ">=", 600,
                    core(Pattern::hot, true)),
        make_target("hot_vs_tagcheck", "tagcheck / gdrhook.lookup hot median, " + at,
                    ratio("tagcheck", Pattern::hot), ">=", 10, core(Pattern::hot, false)),
        make_target("hot_vs_ucs_rcache", "ucs_rcache / gdrhook.lookup hot median, " + at,
                    ratio("ucs_rcache", Pattern::hot), ">=", 5, core(Pattern::hot, false)),
        make_target("random_vs_ucs_rcache", "ucs_rcache / gdrhook.lookup random median, " + at,
                    ratio("ucs_rcache", Pattern::random), ">=", 6, core(Pattern::random, false)),
        make_target("hot_scaling", "gdrhook.lookup hot throughput, " + many + " / 1 thread, " + at,
                    scaling(Pattern::hot), ">=", 12, core(Pattern::hot, true)),
        make_target("random_scaling",
                    "gdrhook.lookup random throughput, " + many + " / 1 thread, " + at,
                    scaling(Pattern::random), ">=", 12, core(Pattern::random, true)),
    };
}

std::vector<Target> lookup_targets_in_rounds(const std::vector<KeptCache> &caches,
                                             const std::vector<Pattern> &patterns, size_t entries,
                                             int threads, int rounds, double seconds)
{
    auto kept = [&](const char *name) -> const KeptCache * {
        for (const KeptCache &k : caches)
            if (name == std::string(k.cache->name()))
                return &k;
        return nullptr;
    };
    std::vector<Point> points;
    for (const Point &p : compared_points)
        if (kept(p.cache) && std::count(patterns.begin(), patterns.end(), p.pattern) &&
            (!p.many_threads || threads > 1))
            points.push_back(p);

    std::vector<Target> targets = lookup_targets({}, entries, threads);
    for (int round = 0; round < rounds; ++round) {
        std::vector<LookupResult> measured;
        // Every other round in reverse: a drift favours neither side.
        for (size_t i = 0; i < points.size(); ++i) {
            const Point &p = points[round % 2 ? points.size() - 1 - i : i];
            const KeptCache &k = *kept(p.cache);
            measured.push_back(measure_lookups(*k.cache, *k.buffers, p.pattern,
                                               p.many_threads ? threads : 1, seconds));
        }
        std::vector<Target> in_round = lookup_targets(measured, entries, threads);
        for (size_t t = 0; t < targets.size(); ++t)
            if (in_round[t].value) {
                targets[t].rounds.push_back(*in_round[t].value);
                targets[t].round_cores.push_back(in_round[t].core.value_or(CoreClock{}));
            }
    }
    for (Target &t : targets)
        if (!t.rounds.empty())
            t.value = median(t.rounds);
    return targets;
}

} // namespace bench
