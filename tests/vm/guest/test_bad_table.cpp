// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_bad_table.cpp - a page table from nvidia_p2p_get_pages that does not
// describe the range asked for is refused, and still handed back.
//
// bad_table: the test provider answers get_pages (and its persistent
// twin) with a table of each malformed shape it knows (enum
// gdrhook_tp_bad_table): no table, another major or an older minor
// version, an unknown page size, a page size the count does not fit, no
// page array, no entries, one entry short of the range or one past it, a
// NULL entry. PIN fails with EIO for each, holds nothing, and the table
// is put all the same (the provider's tables_live back to 0, no misuse);
// a newer minor version is compatible and pins.
#include "common.hpp"

namespace vmtest {
namespace {

struct Shape {
    gdrhook_tp_bad_table shape;
    const char *name;
    int want; // PIN's answer
};

constexpr Shape kShapes[] = {
    {GDRHOOK_TP_TABLE_NULL, "no table", EIO},
    {GDRHOOK_TP_TABLE_VERSION_MAJOR, "another major version", EIO},
    {GDRHOOK_TP_TABLE_VERSION_OLDER, "an older minor version", EIO},
    {GDRHOOK_TP_TABLE_VERSION_NEWER, "a newer minor version", 0},
    {GDRHOOK_TP_TABLE_PAGE_SIZE_UNKNOWN, "an unknown page size", EIO},
    {GDRHOOK_TP_TABLE_PAGE_SIZE_4K, "4 KiB pages, too few", EIO},
    {GDRHOOK_TP_TABLE_PAGE_SIZE_128K, "128 KiB pages, one too many", EIO},
    {GDRHOOK_TP_TABLE_NO_PAGES, "no page array", EIO},
    {GDRHOOK_TP_TABLE_NO_ENTRIES, "no entries", EIO},
    {GDRHOOK_TP_TABLE_ONE_SHORT, "one entry short", EIO},
    {GDRHOOK_TP_TABLE_ONE_EXTRA, "one entry past the range", EIO},
    {GDRHOOK_TP_TABLE_NULL_ENTRY, "a NULL entry", EIO},
};
static_assert(sizeof(kShapes) / sizeof(kShapes[0]) == GDRHOOK_TP_TABLE_SHAPES - 1,
              "every malformed shape the provider knows is tried");

// Two GPU pages: a table one entry short still has one.
constexpr size_t kLen = 2 * kGpuPage;

void try_shape(const Gdrhook &dev, const HostBuffer &buf, const Shape &s, uint32_t flags)
{
    set_param("gdrhook_tp", "bad_table", std::to_string(s.shape));
    uint64_t h = 0;
    const int got = dev.pin_nvp2p(buf.data(), kLen, &h, flags);
    set_param("gdrhook_tp", "bad_table", "0");
    std::printf("bad_table: %s%s -> PIN %d (%s)\n", s.name,
                flags & GDRHOOK_PIN_PERSISTENT ? ", persistent" : "", got, std::strerror(got));
    CHECK_ERR(got, s.want);
    if (got == 0)
        CHECK_OK(dev.unpin(h));
    check_no_leaks_but_files(s.name);
}

} // namespace

int test_bad_table()
{
    {
        Gdrhook dev;
        HostBuffer buf(kLen);
        CHECK(dev.ok());
        for (const Shape &s : kShapes) {
            try_shape(dev, buf, s, 0);
            try_shape(dev, buf, s, GDRHOOK_PIN_PERSISTENT);
        }
        // The same range pins once the provider answers well again.
        uint64_t h;
        CHECK_OK(dev.pin_nvp2p(buf.data(), kLen, &h));
        CHECK_OK(dev.unpin(h));
    }
    check_no_leaks("bad_table");
    return 0;
}

} // namespace vmtest
