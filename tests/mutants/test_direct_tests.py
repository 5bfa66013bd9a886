#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""direct_tests.py runs tests as meson test would, or the mutation check's
verdicts are wrong: a failure it missed is a survivor nobody made, a pass
it missed a catch nobody earned. Checked on small shell tests: exit 0
passes and 77 skips while 1 fails; a test past its timeout is stopped,
with the children of its session; the test's variables reach it over the
process's, and MALLOC_PERTURB_ is set; the working directory is the build
directory unless the test names one; nothing starts after a failure; a
test that is not is_parallel runs alone."""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import direct_tests  # noqa: E402
from checklist import check, finish  # noqa: E402


def shell(name, script, timeout=30, env=None, workdir=None, parallel=True):
    return {"name": name, "suite": ["gdrhook:unit"], "cmd": ["sh", "-c", script],
            "env": env or {}, "workdir": workdir, "timeout": timeout, "is_parallel": parallel,
            "protocol": "exitcode"}


with tempfile.TemporaryDirectory() as build:
    log = os.path.join(build, "log")
    run = lambda tests: direct_tests.run(tests, build, dict(os.environ, OUTER="outer"), log)  # noqa: E731

    check("exit 0 and 77 pass", run([shell("passes", "exit 0"), shell("skips", "exit 77")]) is None)
    check("exit 1 fails", run([shell("passes", "exit 0"), shell("fails", "exit 1")]) == "unit / fails")

    began = time.monotonic()
    marker = os.path.join(build, "child_alive")
    outcome = run([shell("hangs", f"(sleep 3; touch {marker}) & sleep 10", timeout=1)])
    took = time.monotonic() - began
    check(f"a test past its timeout fails ({outcome})", outcome == "unit / hangs")
    check(f"and is stopped at once ({took:.1f} s)", took < 5)
    time.sleep(3)
    check("with its session's children", not os.path.exists(marker))

    env_check = ('[ "$OUTER" = outer ] && [ "$OWN" = own ] && [ "$SHARED" = test ] && '
                 '[ -n "$MALLOC_PERTURB_" ]')
    check("the test's variables over the process's, MALLOC_PERTURB_ set",
          direct_tests.run([shell("env", env_check, env={"OWN": "own", "SHARED": "test"})], build,
                           dict(os.environ, OUTER="outer", SHARED="process"), log) is None)
    check("the build directory is the working directory",
          run([shell("cwd", f'[ "$(pwd -P)" = "$(cd {build} && pwd -P)" ]')]) is None)
    check("unless the test names one",
          run([shell("cwd", '[ "$(pwd -P)" = "$(cd / && pwd -P)" ]', workdir="/")]) is None)

    started = os.path.join(build, "started_after_failure")
    check("nothing starts after a failure",
          run([shell("fails", "exit 1"), shell("second", "sleep 1"), shell("later", f"touch {started}")])
          == "unit / fails" and not os.path.exists(started))

    alone = os.path.join(build, "running")
    # Each test fails if another holds the mark (mkdir: one wins).
    mark = f"mkdir {alone} && sleep 0.5 && rmdir {alone}"
    check("a test that is not is_parallel runs alone",
          run([shell("a", mark), shell("b", mark, parallel=False), shell("c", mark)]) is None)
    # Two that run at once meet before either takes the mark, so that the
    # second's mkdir comes while the first holds it however late the
    # second starts on a loaded machine (a start 0.5 s late made the two
    # take turns, and this check fail).
    def meeting(me, other):
        return (f"touch {build}/{me}; i=0; until [ -e {build}/{other} ]; do "
                f"i=$((i + 1)); [ $i -lt 400 ] || exit 0; sleep 0.05; done; "
                f"mkdir {alone} && sleep 2 && rmdir {alone}")
    check("(and the check would see two at once)",
          run([shell("a", meeting("a_here", "b_here")), shell("b", meeting("b_here", "a_here"))])
          is not None)

finish()
