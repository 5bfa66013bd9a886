// SPDX-License-Identifier: GPL-2.0-only OR MIT
// gdrhook-vmtest NAME: runs one in-guest test; exit status 0 means it passed,
// 77 that it was skipped.
#include "common.hpp"

#include <cstring>

int main(int argc, char** argv)
{
	static const struct {
		const char* name;
		int (*fn)();
	} tests[] = {
		{"basic", vmtest::test_basic},
		{"races", vmtest::test_races},
		{"bad_input", vmtest::test_bad_input},
		{"fuzz", vmtest::test_fuzz},
		{"kill", vmtest::test_kill},
		{"backend", vmtest::test_backend},
		{"pipeline", vmtest::test_pipeline},
	};
	if (argc == 2)
		for (const auto& t : tests)
			if (std::strcmp(argv[1], t.name) == 0) {
				std::setvbuf(stdout, nullptr, _IOLBF, 0);
				vmtest::Stopwatch sw;
				int rc = t.fn();
				// 77: skipped (what it needs is absent), as meson counts it.
				std::printf("%s: %s in %.1f s\n", t.name,
					    rc == 0 ? "passed" : rc == 77 ? "skipped" : "failed", sw.seconds());
				return rc;
			}
	std::fprintf(stderr, "usage: %s basic|races|bad_input|fuzz|kill|backend|pipeline\n", argv[0]);
	return 2;
}
