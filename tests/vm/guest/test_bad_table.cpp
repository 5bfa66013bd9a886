// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_bad_table.cpp - a page table from nvidia_p2p_get_pages that does not
// describe the range asked for is refused, and still handed back.
//
// bad_table (desktop) and tegra_bad_table (the Tegra flavour): the test
// provider answers get_pages (and the desktop's persistent twin) with a
// table of each malformed shape it knows (enum gdrhook_tp_bad_table): no
// table, another major or an older minor version, an unknown page size,
// a page size the count does not fit, no page array, no entries, one
// entry short of the range or one past it, a NULL entry. PIN fails with
// EIO for each, holds nothing, and the table is put all the same (the
// provider's tables_live back to 0, no misuse). A newer minor version is
// compatible and pins; so, on the desktop only, do pages whose last one
// runs past the range's end (Tegra's pages end where the range does).
#include "common.hpp"

namespace vmtest {
namespace {

struct Shape {
    gdrhook_tp_bad_table shape;
    const char *name;
    int desktop; // PIN's answer with each flavour
    int tegra;
};

constexpr Shape kShapes[] = {
    {GDRHOOK_TP_TABLE_NULL, "no table", EIO, EIO},
    {GDRHOOK_TP_TABLE_VERSION_MAJOR, "another major version", EIO, EIO},
    {GDRHOOK_TP_TABLE_VERSION_OLDER, "an older minor version", EIO, EIO},
    {GDRHOOK_TP_TABLE_VERSION_NEWER, "a newer minor version", 0, 0},
    {GDRHOOK_TP_TABLE_PAGE_SIZE_UNKNOWN, "an unknown page size", EIO, EIO},
    {GDRHOOK_TP_TABLE_PAGE_SIZE_4K, "4 KiB pages, as many as 64 KiB ones", EIO, EIO},
    {GDRHOOK_TP_TABLE_PAGE_SIZE_128K, "128 KiB pages, too many", EIO, EIO},
    {GDRHOOK_TP_TABLE_LAST_PAST_END, "pages a size up, the last past the end", 0, EIO},
    {GDRHOOK_TP_TABLE_NO_PAGES, "no page array", EIO, EIO},
    {GDRHOOK_TP_TABLE_NO_ENTRIES, "no entries", EIO, EIO},
    {GDRHOOK_TP_TABLE_ONE_SHORT, "one entry short", EIO, EIO},
    {GDRHOOK_TP_TABLE_ONE_EXTRA, "one entry past the range", EIO, EIO},
    {GDRHOOK_TP_TABLE_NULL_ENTRY, "a NULL entry", EIO, EIO},
};
static_assert(sizeof(kShapes) / sizeof(kShapes[0]) == GDRHOOK_TP_TABLE_SHAPES - 1,
              "every malformed shape the provider knows is tried");

// Ranges that pages one size up (128 KiB on the desktop, 64 KiB on Tegra)
// cover with the last running past the end, and a table one entry short
// still has one.
constexpr size_t kDesktopLen = 3 * kGpuPage;
constexpr size_t kTegraLen = 17 * 4096;

void try_shape(const Gdrhook &dev, const HostBuffer &buf, const Shape &s, bool tegra,
               uint32_t flags)
{
    set_param("gdrhook_tp", "bad_table", std::to_string(s.shape));
    uint64_t h = 0;
    const int got = dev.pin_nvp2p(buf.data(), buf.size(), &h, flags);
    set_param("gdrhook_tp", "bad_table", "0");
    std::printf("%sbad_table: %s%s -> PIN %d (%s)\n", tegra ? "tegra_" : "", s.name,
                flags & GDRHOOK_PIN_PERSISTENT ? ", persistent" : "", got, std::strerror(got));
    CHECK_ERR(got, tegra ? s.tegra : s.desktop);
    if (got == 0)
        CHECK_OK(dev.unpin(h));
    check_no_leaks_but_files(s.name);
}

int try_every_shape(bool tegra)
{
    {
        Gdrhook dev;
        HostBuffer buf(tegra ? kTegraLen : kDesktopLen);
        CHECK(dev.ok());
        for (const Shape &s : kShapes) {
            try_shape(dev, buf, s, tegra, 0);
            if (!tegra) // Tegra has no persistent pinning
                try_shape(dev, buf, s, tegra, GDRHOOK_PIN_PERSISTENT);
        }
        // The same range pins once the provider answers well again.
        uint64_t h;
        CHECK_OK(dev.pin_nvp2p(buf.data(), buf.size(), &h));
        CHECK_OK(dev.unpin(h));
    }
    check_no_leaks(tegra ? "tegra_bad_table" : "bad_table");
    return 0;
}

} // namespace

int test_bad_table()
{
    return try_every_shape(false);
}

int test_tegra_bad_table()
{
    return try_every_shape(true);
}

} // namespace vmtest
