#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The mutation check leaves out of its unmutated run only the tests a run
of the same tree passed (run.py, GDRHOOKTEST_MUTANTS_PASSED): a test that
failed, timed out or was skipped there, or one the log does not name, is
still run unmutated, or a test that fails without any mutant would catch
them all. Checked on a testlog.json written here: each result, the log of
the other architecture, an unreadable log, a garbled one."""
import json
import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.dirname(here))
import run  # noqa: E402
from checklist import check, finish  # noqa: E402


with tempfile.TemporaryDirectory() as folder:
    log = os.path.join(folder, "testlog.json")
    with open(log, "w") as f:
        for name, result in [("cli / cli units", "OK"), ("shim / shim capture", "FAIL"),
                             ("kmod / vm", "TIMEOUT"), ("ucx / ucx bridge", "SKIP"),
                             ("unit / core", "EXPECTEDFAIL")]:
            f.write(json.dumps({"name": f"gdrhook:{name}", "result": result}) + "\n")
    native = run.passed_in_log(f"native={log}", None)
    check("a passed test is taken as passed", "cli units" in native)
    check("a failed one is run again", "shim capture" not in native)
    check("a timed-out one is run again", "vm" not in native)
    check("a skipped one is run again", "ucx bridge" not in native)
    check("an expected failure is run again", "core" not in native)
    check("one the log does not name is run", "direct tests" not in native)
    check("the other architecture's log is not this build's",
          run.passed_in_log(f"aarch64={log}", None) == set() and
          run.passed_in_log(f"native={log}", "aarch64") == set())
    check("an unreadable log passes nothing",
          run.passed_in_log(f"native={folder}/missing.json", None) == set())
    with open(log, "a") as f:
        f.write("{not json\n")
    check("a garbled log passes nothing", run.passed_in_log(f"native={log}", None) == set())
    check("no setting passes nothing", run.passed_in_log("", None) == set())

finish()
