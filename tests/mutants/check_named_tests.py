#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Every mutant of mutants.py names, in `tests`, at least one test, and
each test it names is one meson knows, in one of the mutant's suites; and
its edit still applies: `find` occurs once in `file` (a change that moved
the line leaves a stale mutant, which CI's mutants leg reports only after
some twenty minutes: the run of 6e7cb4c).

usage: check_named_tests.py BUILD_DIR

tests/mutants/run.py runs a mutant's named tests first and the rest of its
suites only if they pass; a name meson does not know (or of another suite)
is dropped there without a word, and the mutant waits for its whole suites
(CI's mutants leg, issue 40). The tests meson knows are those of BUILD_DIR
(meson-info/intro-tests.json); a mutant whose suites this build has no
test of at all (UCX disabled, no Slurm headers, the module's suite under a
sanitizer) cannot be judged here and is listed as such."""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(here, "..", "..")
sys.path.insert(0, here)
from mutants import MUTANTS, times_found  # noqa: E402


def suites_of(build):
    """{test name: its suites, without the project's prefix}"""
    with open(os.path.join(build, "meson-info", "intro-tests.json")) as f:
        return {t["name"]: {s.split(":")[-1] for s in t["suite"]} for t in json.load(f)}


def problems(mutants, known):
    """The lines to complain of, and the mutants not judged in this build."""
    found, unjudged = [], []
    present = set().union(*known.values()) if known else set()
    for m in mutants:
        with open(os.path.join(ROOT, m["file"])) as f:
            found_times = times_found(m, f.read())
        if found_times != 1:
            found.append(f"{m['name']}: its edit matches {found_times} times in {m['file']}, not once")
        named = m.get("tests", [])
        if not named:
            found.append(f"{m['name']}: names no test (its whole suites run: {', '.join(m['suites'])})")
            continue
        if not present & set(m["suites"]):
            unjudged.append(m["name"])
            continue
        for test in named:
            if test not in known:
                found.append(f"{m['name']}: names '{test}', which meson does not know")
            elif not known[test] & set(m["suites"]):
                found.append(f"{m['name']}: names '{test}', which is not in its suites "
                             f"({', '.join(m['suites'])})")
    return found, unjudged


def main(argv):
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    found, unjudged = problems(MUTANTS, suites_of(argv[0]))
    for line in found:
        print(line)
    if unjudged:
        print(f"not judged (no test of their suites in this build): {', '.join(unjudged)}")
    print(f"{len(MUTANTS)} mutants, {len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
