# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Runs some tests of a native meson build as `meson test --no-rebuild
--num-processes 2 --maxfail 1` runs them, without starting meson: its
start-up and introspection cost 0.5 to 0.8 s a call, and the mutation
check (run.py) calls it about 600 times a run, for tests that mostly take
a second.

Kept from meson test (mesonbuild/mtest.py, meson 1.0): the test's command;
its environment, the process's with the test's own variables over it; its
working directory, the build directory unless the test names one; a new
session per test, whose group gets SIGTERM at the timeout and SIGKILL half
a second later; MALLOC_PERTURB_ set at random when unset; exit status 0
passes and 77 skips; a test that is not is_parallel runs alone; nothing is
started after the first failure, and the tests still running are stopped.

Not kept, so refused here (run.py then runs meson test): cross builds
(their exe wrapper), protocols other than exitcode, and a tree whose
meson.build files define test setups or prepend or append to a test's
environment, which introspection does not show as meson test applies
them (supported_tree())."""
import os
import random
import re
import signal
import subprocess
import tempfile
import time

SKIPPED = 77
PARALLEL = 2


def supported(test):
    return test["protocol"] == "exitcode"


def supported_tree(root):
    """No meson.build under `root` defines a test setup or builds an
    environment by prepending or appending."""
    unsupported = re.compile(r"add_test_setup|\.(prepend|append)\s*\(")
    for folder, _, files in os.walk(root):
        if "meson.build" in files and not folder.startswith(os.path.join(root, "build")):
            with open(os.path.join(folder, "meson.build")) as f:
                if unsupported.search(f.read()):
                    return False
    return True


class Running:
    """One test started in its own session, its output going to the log."""

    def __init__(self, test, build, base_env, log):
        self.test = test
        env = dict(base_env)
        env.update(test["env"])
        if not env.get("MALLOC_PERTURB_"):
            env["MALLOC_PERTURB_"] = str(random.randint(1, 255))
        # Its own file, copied to the log when it ends: two tests at once
        # would interleave their lines.
        self.output = tempfile.TemporaryFile()
        self.process = subprocess.Popen(test["cmd"], cwd=test["workdir"] or build, env=env,
                                        stdout=self.output, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        timeout = test["timeout"]
        self.deadline = time.monotonic() + timeout if timeout and timeout > 0 else None

    def stop(self):
        """meson test's way: the group's SIGTERM, SIGKILL half a second on."""
        for sig, grace in ((signal.SIGTERM, 0.5), (signal.SIGKILL, 1.0)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(grace)
                return
            except subprocess.TimeoutExpired:
                continue

    def outcome(self):
        """None while it runs; then 'OK', 'SKIP', 'FAIL' or 'TIMEOUT'."""
        status = self.process.poll()
        if status is None:
            if self.deadline is not None and time.monotonic() > self.deadline:
                self.stop()
                return "TIMEOUT"
            return None
        if status == 0:
            return "OK"
        return "SKIP" if status == SKIPPED else "FAIL"


def display_name(test):
    """As meson's log names it: 'SUITE / NAME' (its project prefix left out)."""
    suites = [s.split(":")[-1] for s in test["suite"]]
    return f"{suites[0]} / {test['name']}" if suites else test["name"]


def run(tests, build, env, log_path):
    """Runs `tests` (introspection entries, in order). Returns the display
    name of the first that failed or timed out, or None."""
    pending = list(tests)
    running = []
    failed = None
    with open(log_path, "a") as log:
        while (pending or running) and failed is None:
            # A test that is not is_parallel runs with no other.
            while pending and len(running) < PARALLEL and all(r.test["is_parallel"] for r in running):
                if running and not pending[0]["is_parallel"]:
                    break
                running.append(Running(pending.pop(0), build, env, log))
            time.sleep(0.01)
            for r in list(running):
                result = r.outcome()
                if result is None:
                    continue
                running.remove(r)
                r.output.seek(0)
                log.write(f"==> {display_name(r.test)}: {result}\n")
                log.write(r.output.read().decode(errors="replace"))
                log.flush()
                r.output.close()
                if result in ("FAIL", "TIMEOUT") and failed is None:
                    failed = display_name(r.test)
        for r in running:
            r.stop()
    return failed
