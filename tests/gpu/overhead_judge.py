#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The verdict on the shim's cost per 1 MiB cuMemAlloc+cuMemFree pair, from
alloc_free_ab's output of several processes (tests/gpu/overhead.py in
run.sh's overhead row, and bench.sh's verdicts). Met when the median over
the processes of the added time (each one's trimmed mean) is at most
GOAL_NS and every process's overhead_percent is at most GOAL_PERCENT: one
process over the goal fails the row, however good the median. A process
whose output lacks either figure fails it too.

usage: overhead_judge.py FILE   (outputs separated by lines "== process N")"""
import re
import statistics
import sys

GOAL_NS = 120
GOAL_PERCENT = 0.2


def figures(output):
    """(overhead_percent, added_ns_trimmed_mean) of one process, or None."""
    percent = re.search(r"overhead_percent=([-\d.]+)", output)
    added = re.search(r"added_ns_trimmed_mean=([-\d.]+)", output)
    if not percent or not added:
        return None
    return float(percent.group(1)), float(added.group(1))


def verdict(outputs, goal_ns=GOAL_NS, goal_percent=GOAL_PERCENT):
    """(met, one line saying why) for the outputs of several processes."""
    found = [figures(o) for o in outputs]
    missing = [i + 1 for i, f in enumerate(found) if f is None]
    if not outputs or missing:
        return False, f"no figures from process(es) {missing or 'any'}"
    percents = [p for p, _ in found]
    added = statistics.median(a for _, a in found)
    over = [f"{i + 1} ({p:.3f}%)" for i, p in enumerate(percents) if p > goal_percent]
    met = added <= goal_ns and not over
    line = (f"added {added:.0f} ns a pair (median of {len(found)} processes; goal <= {goal_ns}), "
            f"overhead {min(percents):.3f}..{max(percents):.3f}% (every process <= {goal_percent}%)")
    if over:
        line += f"; over: process {', '.join(over)}"
    return met, line


def split_processes(text):
    return [part for part in re.split(r"^== process \d+\n", text, flags=re.M) if part.strip()]


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        ok, why = verdict(split_processes(f.read()))
    print(f"overhead per pair: {'met' if ok else 'NOT met'}: {why}")
    sys.exit(0 if ok else 1)
