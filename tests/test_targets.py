#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""What a set of meson tests needs built.

usage: test_targets.py BUILD_DIR SUITE...

Prints, one per line, the ninja targets (paths relative to BUILD_DIR) that
the tests of the named suites depend on, as `meson test` itself would
rebuild them. tests/run_all.sh builds only these for its sanitizer builds,
and tests/mutants/run.py for each mutant: a whole-tree build is most of
their time otherwise."""
import json
import os
import subprocess
import sys


class MesonTests:
    """The tests of a configured meson build and the targets each needs."""

    def __init__(self, build):
        def introspect(what):
            out = subprocess.run(["meson", "introspect", build, what],
                                 capture_output=True, check=True).stdout
            return json.loads(out)
        outputs = {t["id"]: [os.path.relpath(f, build) for f in t["filename"]]
                   for t in introspect("--targets")}
        self.tests = introspect("--tests")
        self.needs = {t["name"]: sorted({f for d in t["depends"] for f in outputs.get(d, [])})
                      for t in self.tests}

    def in_suites(self, suites):
        """The names of the tests of these suites, in meson's order."""
        wanted = {f"gdrhook:{s}" for s in suites}
        return [t["name"] for t in self.tests if wanted & set(t["suite"])]

    def entry(self, name):
        """The test's introspection entry: cmd, env, workdir, timeout..."""
        return next(t for t in self.tests if t["name"] == name)

    def targets(self, names):
        return sorted({f for name in names for f in self.needs[name]})


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    tests = MesonTests(argv[0])
    for target in tests.targets(tests.in_suites(argv[1:])):
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
