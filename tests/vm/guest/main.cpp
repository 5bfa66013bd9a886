// SPDX-License-Identifier: GPL-2.0-only OR MIT
// gdrhook-vmtest NAME: runs one in-guest test; exit status 0 means it passed.
#include "common.hpp"

#include <cstring>

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)();
    } tests[] = {
        {"basic", vmtest::test_basic},
        {"races", vmtest::test_races},
        {"bad_input", vmtest::test_bad_input},
        {"fuzz", vmtest::test_fuzz},
        {"kill", vmtest::test_kill},
        {"backend", vmtest::test_backend},
        {"pipeline", vmtest::test_pipeline},
        {"pin_vs_callback", vmtest::test_pin_vs_callback},
        {"callback_teardown", vmtest::test_callback_teardown},
        {"opener_only", vmtest::test_opener_only},
        {"errnos", vmtest::test_errnos},
        {"bad_table", vmtest::test_bad_table},
        {"access", vmtest::test_access},
        {"provider_life", vmtest::test_provider_life},
        {"failslab", vmtest::test_failslab},
        {"move_notify", vmtest::test_move_notify},
        {"node", vmtest::test_node},
        {"host_pages", vmtest::test_host_pages},
        {"pin_limits", vmtest::test_pin_limits},
        {"memlock_user", vmtest::test_memlock_user},
        {"integrated", vmtest::test_integrated},
        {"closed_device", vmtest::test_closed_device},
        {"tegra", vmtest::test_tegra},
        {"tegra_bad_table", vmtest::test_tegra_bad_table},
    };
    if (argc == 2)
        for (const auto &t : tests)
            if (std::strcmp(argv[1], t.name) == 0) {
                std::setvbuf(stdout, nullptr, _IOLBF, 0);
                // Each test starts from the provider's defaults, whatever
                // a failed test before it left set.
                vmtest::reset_provider_params();
                vmtest::Stopwatch sw;
                int rc = t.fn();
                std::printf("%s: %s in %.1f s\n", t.name, rc == 0 ? "passed" : "failed",
                            sw.seconds());
                return rc;
            }
    std::fprintf(stderr, "usage: %s TEST; tests:", argv[0]);
    for (const auto &t : tests)
        std::fprintf(stderr, " %s", t.name);
    std::fprintf(stderr, "\n");
    return 2;
}
