// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The optional profile's histograms (cache/prim/profile.h): a value's
// bucket reports it within an eighth, and a timer counts only while the
// profile is on.
#include "cache/prim/profile.h"

#include <catch2/catch.hpp>

#include <string>

using namespace gdrhook;

namespace {

const ProfileSummary *summary_of(const std::vector<ProfileSummary> &all, ProfilePart part)
{
    for (const ProfileSummary &s : all)
        if (s.part == part)
            return &s;
    return nullptr;
}

} // namespace

TEST_CASE("a profile bucket reports its values within an eighth", "[profile]")
{
    for (uint64_t value : {0ull, 1ull, 7ull, 8ull, 15ull, 16ull, 17ull, 100ull, 1000ull,
                           123456789ull, 1ull << 40, ~0ull}) {
        INFO("value " << value);
        const double reported = static_cast<double>(profile_bucket_value(profile_bucket(value)));
        const double v = static_cast<double>(value);
        CHECK(reported >= v - v / 8);
        CHECK(reported <= v + v / 8);
    }
    for (uint64_t value = 1; value < 100000; value = value * 3 / 2 + 1)
        CHECK(profile_bucket(value) <= profile_bucket(value + 1)); // in order
}

TEST_CASE("a profile timer counts only while the profile is on, and the report names the part",
          "[profile]")
{
    {
        ProfileTimer off(ProfilePart::writer_event);
    }
    CHECK(summary_of(profile_summaries(), ProfilePart::writer_event) == nullptr);

    hot_line.profiling = true;
    for (uint64_t ticks : {100ull, 100ull, 100ull, 5000ull})
        profile_add(ProfilePart::release, ticks);
    {
        ProfileTimer on(ProfilePart::writer_event);
    }
    hot_line.profiling = false;

    const auto all = profile_summaries();
    const ProfileSummary *release = summary_of(all, ProfilePart::release);
    REQUIRE(release != nullptr);
    CHECK(release->count == 4);
    CHECK(release->sum == 5300);
    CHECK(release->max == 5000);
    CHECK(release->p50 >= 88);
    CHECK(release->p50 <= 112);
    CHECK(release->p99 >= 4375);
    REQUIRE(summary_of(all, ProfilePart::writer_event) != nullptr);
    CHECK(summary_of(all, ProfilePart::writer_event)->count == 1);

    bool said = false;
    for (const std::string &line : profile_report(1000)) // a tick a microsecond
        if (line.rfind("profile: release n=4 mean_ns=1325000 ", 0) == 0)
            said = true;
    CHECK(said);
}
