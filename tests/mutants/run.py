#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The mutation check: each mutant in mutants.py is a small edit that breaks
one named promise of gdrhook. Applied alone to a scratch copy of the tree,
rebuilt incrementally, the suites that apply must fail.

usage: run.py [--only NAME[,NAME...]] [--jobs N] [--keep] [--list] [--scratch DIR]

Prints one line per mutant, "caught by SUITE/TEST" or "SURVIVED", and ends
with "N caught, M survived"; any survivor, or a mutant whose edit no longer
matches the source exactly once, fails the run. A mutant that survives is
run once more; caught then, its line says CAUGHT-ON-SECOND-RUN.

--jobs N (default: one a processor, two at least and four at most) runs
the mutants in N workers side by side, each on its own scratch copy. The
mutants go out by suite (all of a suite's to one worker, so that one
suite's tests never run twice at once: the Slurm daemons, the module's
VM), the longest suite first, each to the first worker that is free. Their
lines are printed as they come, then each worker's time, then one total.

--scratch DIR: the scratch copy to use (made there if DIR is empty, its
builds reused if not); a worker passes its own to each run it starts."""
import argparse
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, here)
sys.path.insert(0, os.path.dirname(here))
from mutants import MUTANTS, times_found  # noqa: E402
from test_targets import MesonTests  # noqa: E402
import direct_tests  # noqa: E402


def copy_tree(scratch):
    files = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if not name or not os.path.exists(os.path.join(root, name)):
            continue
        target = os.path.join(scratch, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(root, name), target, follow_symlinks=False)


def run(command, cwd, log, env=None):
    with open(log, "a") as f:
        f.write("$ " + " ".join(command) + "\n")
        f.flush()
        return subprocess.run(command, cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                              env=env).returncode


@functools.lru_cache(maxsize=None)  # the same for every mutant of a run
def one_debian_kernel():
    """A Debian kernel tests/vm/run.sh can boot (image and headers), not
    PREEMPT_RT: a module mutant boots one kernel, not all of them."""
    found = []
    for name in sorted(os.listdir("/boot")):
        if not name.startswith("vmlinuz-"):
            continue
        version = name[len("vmlinuz-"):]
        if "-rt-" not in version and os.path.isdir(f"/usr/src/linux-headers-{version}"):
            found.append(version)
    return found[0] if found else None


@functools.lru_cache(maxsize=None)  # asked once per run, not per mutant
def source_git_dir():
    """This repository's history, which the scratch copy lacks, for the
    tests that remake a commit's release tarball
    (tests/packaging/test_recipes.py)."""
    return subprocess.run(["git", "-C", root, "rev-parse", "--absolute-git-dir"],
                          capture_output=True, text=True).stdout.strip()


def mutant_environment(m, scratch):
    """The environment of a mutant's test run: its own settings (the module
    steps that apply) and, for the module, one kernel unless the caller
    named some, built where the previous module mutant left its objects
    (one file recompiled, not three modules)."""
    env = dict(os.environ)
    env["GDRHOOKTEST_STOP_AT_FAILURE"] = "1"  # tests/catch_main.cpp
    env.update(m.get("env", {}))
    env.setdefault("GDRHOOKTEST_SOURCE_GIT", source_git_dir())
    if "kmod" in m["suites"]:
        env["GDRHOOKTEST_VM_KBUILD_DIR"] = os.path.join(scratch, "kbuild")
        if "GDRHOOKTEST_VM_KVERS" not in os.environ:
            kernel = one_debian_kernel()
            if kernel:
                env["GDRHOOKTEST_VM_KVERS"] = kernel
    return env


def first_failure(build):
    try:
        with open(os.path.join(build, "meson-logs", "testlog.json")) as f:
            for line in f:
                test = json.loads(line)
                if test.get("result") not in ("OK", "EXPECTEDFAIL", "SKIP"):
                    return test.get("name", "?").split(":")[-1].strip()
    except OSError:
        pass
    return None


def stages(tests, m):
    """The mutant's tests in at most two rounds: first the tests named in
    its `tests` (those expected to catch it, cheaper than the whole suite),
    then, only if they pass, every other test of its suites."""
    # The format check (suite 'format') is left out: a mutant is an edit
    # nobody formatted, and it would "catch" any the real tests let through.
    unformatted = set(tests.in_suites(["format"]))
    in_suites = [name for name in tests.in_suites(m["suites"]) if name not in unformatted]
    first = [name for name in in_suites if name in m.get("tests", [])]
    rest = [name for name in in_suites if name not in first]
    return [stage for stage in (first, rest) if stage]


class Clock:
    """Where a mutant's seconds go: compiling, and running its tests."""

    def __init__(self):
        self.build = self.tests = 0.0

    def timed(self, what, function):
        began = time.time()
        try:
            return function()
        finally:
            setattr(self, what, getattr(self, what) + time.time() - began)

    def __str__(self):
        return f"build {self.build:.0f} s, tests {self.tests:.0f} s"


def build_targets(build, targets, scratch, log):
    """ninja for these targets; none to build is nothing to do (ninja with
    no target would build the whole tree: a mutant of a script or of the
    module did that, and again after each compiled mutant's restore)."""
    if not targets:
        return 0
    return run(["ninja", "-C", build, *targets], scratch, log)


def run_stage(build, scratch, log, tests, names, env, clock=None, direct=False):
    """Builds what `names` need and runs them, stopping at the first
    failure: with `direct`, without starting meson (direct_tests.py).
    Returns "stale", the failing test's name, or None."""
    clock = clock or Clock()
    if clock.timed("build", lambda: build_targets(build, tests.targets(names), scratch, log)):
        return "stale"
    if direct:
        return clock.timed("tests", lambda: direct_tests.run(
            [tests.entry(name) for name in names], build, env, log))
    status = clock.timed("tests", lambda: run(
        ["meson", "test", "-C", build, "--no-rebuild", "--num-processes", "2",
         "--maxfail", "1", *names], scratch, log, env))
    failed = first_failure(build)
    if status != 0 or failed:
        return failed or "meson test"
    return None


# GDRHOOKTEST_MUTANTS_PASSED: "native=TESTLOG aarch64=TESTLOG", meson's
# testlog.json of a build of this same tree (tests/run_all.sh's build-test
# and build-aarch64, run just before). A test that passed there is not
# run unmutated again: that guard (a test failing without a mutant would
# "catch" every mutant) already holds for it.
PASSED_LOGS = "GDRHOOKTEST_MUTANTS_PASSED"


def passed_in_log(setting, cross):
    """The names of the tests the testlog named for `cross` (None:
    "native") records as passed; empty where it names none or is
    unreadable."""
    wanted = cross or "native"
    passed = set()
    for item in setting.split():
        kind, _, path = item.partition("=")
        if kind != wanted:
            continue
        try:
            with open(path) as f:
                for line in f:
                    test = json.loads(line)
                    if test.get("result") == "OK":
                        passed.add(test.get("name", "").split(" / ", 1)[-1])
        except (OSError, ValueError):
            return set()
    return passed


# A mutant with `cross` is built for that architecture with the cross
# file here and its suites run under the file's exe_wrapper (qemu-user).
CROSS_FILES = {"aarch64": "cross/aarch64-linux-gnu.ini"}
CCACHE_CROSS_FILES = {"aarch64": "cross/ccache-aarch64.ini"}


class Build:
    """One configured build of the scratch tree, native or cross, and the
    tests its mutants run there."""

    def __init__(self, scratch, log, cross, mutants):
        self.dir = os.path.join(scratch, "build" + (f"-{cross}" if cross else ""))
        self.scratch, self.log, self.cross, self.mutants = scratch, log, cross, mutants
        self.tests = None
        self.direct = False  # run the tests without meson test (prepare())

    def prepare(self):
        """Configures, builds and runs the mutants' first tests unmutated.
        Returns an error line, or None."""
        name = f" for {self.cross}" if self.cross else ""
        began = time.time()
        # Compiling is most of the run's time: no debug info, and only what
        # the mutants' tests need is built. The optimization stays the
        # project's (-O2): at -O0 a forked child's test stopped catching
        # fork_queue_not_written, whose catch needs events still queued at
        # fork().
        options = ["-Ddebug=false"]
        if self.cross:
            options += ["--cross-file", os.path.join(self.scratch, CROSS_FILES[self.cross])]
            # ccache, as tests/run_all.sh's aarch64 leg has it: that leg's
            # objects again, not a second cold compile under the cross
            # compiler.
            ccache_file = os.path.join(self.scratch, CCACHE_CROSS_FILES[self.cross])
            if shutil.which("ccache") and os.path.exists(ccache_file):
                options += ["--cross-file", ccache_file]
        configured_before = os.path.exists(os.path.join(self.dir, "build.ninja"))
        if not configured_before and run(["meson", "setup", *options, self.dir],
                                         self.scratch, self.log):
            return f"mutants: the unmutated tree does not configure{name} (see {self.log})"
        self.tests = MesonTests(self.dir)
        # A cross build's tests need meson test's exe wrapper.
        self.direct = (not self.cross and direct_tests.supported_tree(self.scratch) and
                       all(direct_tests.supported(t) for t in self.tests.tests))
        every_test = [n for m in self.mutants for stage in stages(self.tests, m) for n in stage]
        configured = time.time()
        if build_targets(self.dir, self.tests.targets(every_test), self.scratch, self.log):
            return f"mutants: the unmutated tree does not build{name} (see {self.log})"
        built = time.time()
        # A test that fails without a mutant would catch every mutant. The
        # module's tests are left out: the VM suite has just run them, and
        # this build does not compile the module.
        baseline = sorted({n for m in self.mutants if "kmod" not in m["suites"]
                           for n in stages(self.tests, m)[0]})
        # Those a run of the same tree has just passed (tests/run_all.sh's
        # build-test, GDRHOOKTEST_MUTANTS_PASSED) are not run again.
        already = passed_in_log(os.environ.get(PASSED_LOGS, ""), self.cross)
        taken = len([n for n in baseline if n in already])
        baseline = [n for n in baseline if n not in already]
        # Nothing to run when only module mutants are chosen (meson test
        # with no names would run every test).
        failed = baseline and run_stage(self.dir, self.scratch, self.log, self.tests, baseline,
                                        mutant_environment({"suites": []}, self.scratch),
                                        direct=self.direct)
        if failed:
            return f"mutants: the unmutated tree fails {failed}{name} (see {self.log})"
        print(f"mutants: {os.path.basename(self.dir)} ({'tests run directly' if self.direct else 'meson test'}) prepared in {time.time() - began:.0f} s "
              f"(setup {configured - began:.0f} s, build {built - configured:.0f} s, "
              f"unmutated tests {time.time() - built:.0f} s" +
              (f"; {taken} others passed in {PASSED_LOGS}'s run" if taken else "") + ")", flush=True)
        return None


# About how long a mutant takes, by its first suite: the means of a full
# cold run on the 2-core build machine (2026-12-03, 7e44806: 528 mutants;
# a module mutant boots a VM, a cross-built one runs under qemu-user).
# dispatch() hands the suites out longest first by these; which worker
# takes which is decided by who is free, not by these.
SECONDS_BY_SUITE = {"kmod": 22, "slurm": 16, "cache": 14, "shim": 5.3, "stress": 5.3,
                    "hostile": 4.8, "cli": 4.4, "bench": 4, "ucx": 4, "unit": 2.8,
                    "packaging": 1}
CROSS_SECONDS = 38  # one shim mutant took 93 s, the unit ones 10 to 60 s
OTHER_SECONDS = 5  # the mean over all


def expected_seconds(m):
    if m.get("cross"):
        return CROSS_SECONDS
    return SECONDS_BY_SUITE.get(m["suites"][0], OTHER_SECONDS)


def by_suite(mutants):
    """The mutants in buckets, one per suite (a mutant's first suite), and
    every cross-built one in one bucket (a worker that takes it prepares a
    cross build): the longest expected first."""
    buckets = {}
    for m in mutants:
        key = ("cross", m["cross"]) if m.get("cross") else ("suite", m["suites"][0])
        buckets.setdefault(key, []).append(m)
    return sorted(buckets.values(), key=lambda members: -sum(map(expected_seconds, members)))


def dispatch(buckets, workers, run_bucket):
    """run_bucket(worker, bucket) for each bucket, `workers` at a time, in
    the order given: each bucket to the first worker that is free, so that
    when one suite takes longer than its means say, the other workers take
    what is left. Given by suite, split by the means before the start, one
    run of a CI run had cache's, slurm's and the CLI's mutants and took
    2,380 s, the other 1,606 s. Returns run_bucket's results, in order."""
    results = [None] * len(buckets)
    queue = list(enumerate(buckets))
    lock = threading.Lock()

    def worker(index):
        while True:
            with lock:
                if not queue:
                    return
                position, bucket = queue.pop(0)
            results[position] = run_bucket(index, bucket)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(min(workers, len(buckets)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


TOTAL = re.compile(r"^(\d+) caught, (\d+) survived(?:, (\d+) stale)? \(")


def run_in_parallel(buckets, jobs, keep):
    """The buckets in `jobs` workers (dispatch()), each bucket in a run of
    this script on the worker's own scratch copy; returns the exit status,
    1 if any run failed or did not end with its total."""
    started = time.time()
    totals = [0, 0, 0]
    scratches = [tempfile.mkdtemp(prefix="gdrhook-mutants-") for _ in range(jobs)]
    busy = [0.0] * jobs
    print_lock = threading.Lock()

    def run_bucket(index, bucket):
        began = time.time()
        command = [sys.executable, os.path.abspath(__file__), "--jobs", "1", "--keep",
                   "--scratch", scratches[index], "--only", ",".join(m["name"] for m in bucket)]
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        counted = False
        for line in child.stdout:
            total = TOTAL.match(line)
            with print_lock:
                if total:
                    counted = True
                    for i in range(3):
                        totals[i] += int(total.group(i + 1) or 0)
                elif not line.startswith("scratch tree kept: "):
                    print(line, end="", flush=True)
        fine = child.wait() == 0 and counted
        busy[index] += time.time() - began
        return fine

    fine = all(dispatch(buckets, jobs, run_bucket))
    for index, scratch in enumerate(scratches):
        print(f"mutants: worker {index + 1}: {busy[index]:.0f} s" +
              (f", scratch tree kept: {scratch}" if keep else ""))
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)
    caught, survived, broken = totals
    print(f"{caught} caught, {survived} survived" + (f", {broken} stale" if broken else "") +
          f" ({time.time() - started:.0f} s, {jobs} workers side by side)")
    return 0 if fine and caught and not survived and not broken else 1


def parse_arguments(argv):
    """The options of the usage above; anything else is refused with the
    usage (before, an unknown option such as --help started the whole run)."""
    usage = __doc__.split("usage: ", 1)[1].split("\n", 1)[0]
    parser = argparse.ArgumentParser(prog="run.py", usage=usage,
                                     description="The mutation check (see the header of run.py).")
    parser.add_argument("--only", type=lambda text: set(text.split(",")))
    parser.add_argument("--jobs", type=int, default=max(2, min(4, os.cpu_count() or 1)))
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--scratch")
    args = parser.parse_args(argv)
    unknown = sorted(args.only - {m["name"] for m in MUTANTS}) if args.only else []
    if unknown:
        parser.error(f"no mutant named {', '.join(unknown)}")
    return args


def main(argv):
    args = parse_arguments(argv)
    keep = args.keep
    jobs = args.jobs
    mutants = [m for m in MUTANTS if not args.only or m["name"] in args.only]
    if args.list:
        for m in mutants:
            print(f"{m['name']:34} {m['promise']}")
        return 0
    buckets = by_suite(mutants)
    if jobs > 1 and len(buckets) > 1:
        return run_in_parallel(buckets, jobs, keep)
    scratch = args.scratch or tempfile.mkdtemp(prefix="gdrhook-mutants-")
    log = os.path.join(scratch, "mutants.log")
    # A worker's later runs find the tree copied (every mutant's file
    # restored after it) and its builds configured.
    copied = os.path.join(scratch, ".copied")
    if not os.path.exists(copied):
        copy_tree(scratch)
        open(copied, "w").close()
    started = time.time()
    builds = {}
    for m in mutants:
        cross = m.get("cross")
        if cross not in builds:
            builds[cross] = Build(scratch, log, cross, [])
        builds[cross].mutants.append(m)
    for build in builds.values():
        problem = build.prepare()
        if problem:
            print(problem)
            return 1
    caught = survived = broken = 0
    for m in mutants:
        build = builds[m.get("cross")]
        path = os.path.join(scratch, m["file"])
        with open(path) as f:
            original = f.read()
        if times_found(m, original) != 1:
            print(f"{m['name']:34} STALE: its edit matches {times_found(m, original)} times in {m['file']}")
            broken += 1
            continue
        with open(path, "w") as f:
            f.write(original.replace(m["find"], m["replace"]))
        began = time.time()
        clock = Clock()
        try:
            def run_stages():
                for stage in stages(build.tests, m):
                    found = run_stage(build.dir, scratch, log, build.tests, stage,
                                      mutant_environment(m, scratch), clock, build.direct)
                    if found:
                        return found
                return None
            outcome = run_stages()
            # A survivor runs once more: a CI run once ended with one
            # survivor that every run on the build machine, under the same
            # load, caught. Caught the second time, it counts as caught and
            # says so (tests/run_all.sh names it): a catch that needs luck
            # is a test to make sturdier.
            second_try = False
            if outcome is None:
                outcome = run_stages()
                second_try = outcome not in (None, "stale")
            took = f"({time.time() - began:.0f} s: {clock})"
            if outcome == "stale":
                print(f"{m['name']:34} STALE: does not build {took}")
                broken += 1
            elif outcome:
                caught += 1
                retry = " CAUGHT-ON-SECOND-RUN" if second_try else ""
                print(f"{m['name']:34} caught by {outcome}{retry} {took}")
            else:
                survived += 1
                print(f"{m['name']:34} SURVIVED ({m['promise']}) {took}")
        finally:
            with open(path, "w") as f:
                f.write(original)
        sys.stdout.flush()
    print(f"{caught} caught, {survived} survived" + (f", {broken} stale" if broken else "") +
          f" ({time.time() - started:.0f} s)")
    if not keep:
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        print(f"scratch tree kept: {scratch}")
    return 1 if survived or broken or caught == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
