#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""CI runs every suite the build declares: the suites tests/run_all.sh
would pass to `meson test` for build-test (the lines between its
"# suites: begin" and "# suites: end" markers, run here as they run
there) against the suites meson knows (meson-info/intro-tests.json).
gpu alone may be missing: without a GPU it can only skip.

usage: check_ci_suites.py SOURCE_ROOT BUILD_ROOT"""
import os
import re
import subprocess
import sys

# The suites of each test meson knows: read as the mutants' check reads them.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mutants"))
from check_named_tests import suites_of  # noqa: E402

NOT_IN_CI = {"gpu"}


def ci_suites(source):
    with open(os.path.join(source, "tests", "run_all.sh")) as f:
        text = f.read()
    block = re.search(r"^# suites: begin.*?^# suites: end$", text, re.S | re.M)
    if not block:
        sys.exit("check_ci_suites: tests/run_all.sh has no '# suites: begin/end' block")
    out = subprocess.run(["bash", "-c", block.group(0) + '\nprintf "%s\\n" "${all_suites[@]}"'],
                         cwd=source, capture_output=True, text=True, check=True).stdout
    return set(out.split())


def main(source, build):
    run = ci_suites(source)
    problems = []
    # (a test in two suites, "unit" and "format", is run by either)
    for suites in suites_of(build).values():
        if not suites & (run | NOT_IN_CI):
            problems.append(f"a test of suite(s) {', '.join(sorted(suites))} is never run by CI")
    # (a suite this build lacks, such as ucx without UCX, is not a problem
    # here: it is the build's, not CI's list)
    for problem in sorted(set(problems)):
        print(f"check_ci_suites: {problem}")
    print(f"check_ci_suites: CI runs {' '.join(sorted(run))}; {len(set(problems))} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
