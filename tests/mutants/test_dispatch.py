#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The mutation check's workers share the suites by who is free, not by a
split made before the start (run.py, dispatch()): a suite slower than its
means say leaves the rest to the other workers. And a suite's mutants stay
in one bucket (by_suite()), so that its tests never run twice at once.
Checked with buckets that wait on each other instead of running mutants."""
import os
import sys
import threading

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.dirname(here))
import run  # noqa: E402
from checklist import check, finish  # noqa: E402


def dispatched(buckets, workers, wait=None):
    """Runs named buckets through dispatch(); returns, per bucket name, the
    worker that ran it and its place in the order the runs began (counted
    under a lock), and the most run at once. wait(name) is called inside
    each run: it blocks until what the check needs has happened."""
    ran = {}
    lock = threading.Lock()
    running = [0, 0]  # now, most

    def run_bucket(worker, name):
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
            ran[name] = ran.get(name, []) + [(worker, sum(map(len, ran.values())))]
        if wait:
            wait(name)
        with lock:
            running[0] -= 1
        return name

    results = run.dispatch(buckets, workers, run_bucket)
    return ran, running[1], results


# The first bucket runs until all the others have run: it is the suite that
# took far longer than its means. With two workers, the other one must take
# every other bucket; a split made before the start would leave some to
# the busy one, and the slow bucket would wait for them in vain.
quick = [f"quick{i}" for i in range(6)]
all_quick_ran = threading.Event()
done = set()
slow_saw_them_all = []


def slow_until_the_rest_ran(name):
    if name == "slow":
        slow_saw_them_all.append(all_quick_ran.wait(timeout=20))
    else:
        done.add(name)
        if done == set(quick):
            all_quick_ran.set()


ran, most, results = dispatched(["slow"] + quick, 2, slow_until_the_rest_ran)
check("the other worker took every bucket while the slow one ran", slow_saw_them_all == [True])
check("each bucket runs once", all(len(ran.get(name, [])) == 1 for name in ["slow"] + quick))
check("results come back in the buckets' order", results == ["slow"] + quick)
check("never more than two at once", most <= 2)

# Three workers run three at once: the first three wait for each other.
meet = threading.Barrier(3)


def three_meet(name):
    if name in ("b0", "b1", "b2"):
        try:
            meet.wait(timeout=20)
        except threading.BrokenBarrierError:
            pass


ran, most, _ = dispatched([f"b{i}" for i in range(8)], 3, three_meet)
check("three workers run three buckets at once", not meet.broken and most == 3)
check("every bucket ran, once", sorted(ran) == [f"b{i}" for i in range(8)] and
      all(len(runs) == 1 for runs in ran.values()))
# One worker takes them in the order given: the longest first (by_suite's).
ran, most, _ = dispatched([f"b{i}" for i in range(8)], 1)
check("buckets go out in the order given", [ran[f"b{i}"][0][1] for i in range(8)] == list(range(8)))
check("no bucket, nothing to do", run.dispatch([], 2, lambda worker, bucket: 1) == [])


def mutant(name, suite, cross=None):
    return dict(name=name, suites=[suite, "unit"], **({"cross": cross} if cross else {}))


mutants = [mutant("a", "slurm"), mutant("b", "cache"), mutant("c", "slurm"),
           mutant("d", "kmod"), mutant("e", "shim", "aarch64"), mutant("f", "unit", "aarch64")]
buckets = run.by_suite(mutants)
names = [sorted(m["name"] for m in bucket) for bucket in buckets]
check("a suite's mutants are one bucket", ["a", "c"] in names)
check("the cross-built ones are one bucket, whatever their suites", ["e", "f"] in names)
check("every mutant in exactly one bucket", sorted(sum(names, [])) == list("abcdef"))
expected = [sum(map(run.expected_seconds, bucket)) for bucket in buckets]
check("the longest expected first", expected == sorted(expected, reverse=True))

finish()
