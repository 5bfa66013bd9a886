#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""CI runs every suite the build declares: the suites tests/run_all.sh
would pass to `meson test` for build-test (the lines between its
"# suites: begin" and "# suites: end" markers, run here as they run
there) against the suites meson knows (meson-info/intro-tests.json).
gpu alone may be missing: without a GPU it can only skip.

usage: check_ci_suites.py SOURCE_ROOT BUILD_ROOT"""
import json
import os
import re
import subprocess
import sys

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


def meson_suites(build):
    with open(os.path.join(build, "meson-info", "intro-tests.json")) as f:
        tests = json.load(f)
    # "gdrhook:unit"; a test in two suites ("unit", "format") is run by either
    return [{s.split(":")[-1] for s in t["suite"]} for t in tests]


def main(source, build):
    run = ci_suites(source)
    problems = []
    known = set()
    for suites in meson_suites(build):
        known |= suites
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
