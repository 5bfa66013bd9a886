#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""bench.sh's verdicts: one line for each figure of the goals table of
docs/performance.md ("What a pinned free and a pair are held to"), with
its value, its goal and whether this run met it.

usage: bench_verdicts.py BENCH_JSON [CHURN_OUT [OVERHEAD_OUT]]

BENCH_JSON is gdrhook-bench's (the lookups and the dma-buf unpin 40 us
apart); CHURN_OUT is tests/gpu/churn_ab.sh's output for one shim (the
coherence churn on 8 threads and on 1); OVERHEAD_OUT holds alloc_free_ab's
output of several processes, each after a line "== process N"
(overhead_judge.py). A figure whose input is missing is "not measured".
Exits 1 unless every figure was measured and met."""
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overhead_judge  # noqa: E402

CHURN_P99_US = 150  # and at most CHURN_OVER_ONE_THREAD times one thread's p99
CHURN_OVER_ONE_THREAD = 2
# gdrhook-bench's targets that the table names, judged here against the
# table's goals (an older gdrhook-bench's JSON carries older goals).
BENCH_FIGURES = [
    ("unpin_p99_us", "free -> unpin p99, dma-buf, 40 us apart, us", "<=", 25),
    ("hot_median_ns", "hot hit, 1 thread, 65,536 resident, ns", "<=", 3),
    ("hot_threads_vs_tagcheck", "16 threads against the tag check, x", ">=", 600),
    ("random_vs_ucs_rcache", "random hit against UCX's rcache, x", ">=", 6),
]


def churn_verdict(text):
    m = re.search(r"shim 0: 8 threads p50 ([\d.]+) us, p99 ([\d.]+) us; 1 thread p99 ([\d.]+) us",
                  text)
    if not m:
        return None, "not measured"
    p50, p99, one = (float(g) for g in m.groups())
    met = p99 <= CHURN_P99_US and p99 <= CHURN_OVER_ONE_THREAD * one
    # Shown, not judged: the close alone under the same churn, no shim.
    alone = re.search(r"the release alone .*: 8 threads p50 ([\d.]+) us, p99 ([\d.]+) us", text)
    floor = f"; the release alone: p50 {alone[1]}, p99 {alone[2]} us" if alone else ""
    return met, (f"p50 {p50:.1f}, p99 {p99:.1f} us; 1 thread p99 {one:.1f} us{floor} (goal p99 <= "
                 f"{CHURN_P99_US} us and <= {CHURN_OVER_ONE_THREAD}x 1 thread's: "
                 f"{CHURN_OVER_ONE_THREAD * one:.1f})")


def cores_said(t):
    """The cores gdrhook.lookup's point ran on in the rounds (gdrhook-bench's
    round_cores, tools/bench/core_clock.h): the adds a cycle its thread
    got, which falls when the host shares the core, and the clock; empty
    for an older gdrhook-bench's JSON."""
    cores = [c for c in t.get("round_cores") or [] if isinstance(c, list) and len(c) == 2]
    if not cores:
        return ""
    widths = [c[1] for c in cores]
    return (f"; its core: {statistics.median(widths):.2f} adds a cycle [{min(widths):.2f} .. "
            f"{max(widths):.2f}], {statistics.median(c[0] for c in cores):.2f} GHz")


def bench_verdict(targets, name, relation, goal):
    t = targets.get(name)
    if not isinstance(t, dict) or t.get("value") is None:
        return None, "not measured"
    value = t["value"]
    rounds = t.get("rounds") or []
    spread = f" [{min(rounds):.3g} .. {max(rounds):.3g}]" if rounds else ""
    met = value <= goal if relation == "<=" else value >= goal
    return met, f"{value:.3g}{spread} (goal {relation} {goal}){cores_said(t)}"


def read(path):
    if not path or not os.path.exists(path):
        return None
    with open(path) as f:
        return f.read()


def main(argv):
    with open(argv[1]) as f:
        targets = json.load(f).get("targets", {})
    churn = read(argv[2] if len(argv) > 2 else None)
    overhead = read(argv[3] if len(argv) > 3 else None)
    lines = [("free -> unpin under churn, 8 threads x 64 MiB",
              churn_verdict(churn) if churn else (None, "not measured"))]
    lines += [(f[1], bench_verdict(targets, f[0], *f[2:])) for f in BENCH_FIGURES[:1]]
    if overhead:
        lines.append(("added per 1 MiB cuMemAlloc+cuMemFree pair",
                      overhead_judge.verdict(overhead_judge.split_processes(overhead))))
    else:
        lines.append(("added per 1 MiB cuMemAlloc+cuMemFree pair", (None, "not measured")))
    lines += [(f[1], bench_verdict(targets, f[0], *f[2:])) for f in BENCH_FIGURES[1:]]
    print("verdicts (docs/performance.md, what a pinned free and a pair are held to):")
    for what, (met, why) in lines:
        word = "n/a" if met is None else "met" if met else "NOT"
        print(f"  {word:<4} {what}: {why}")
    return 0 if all(met for _, (met, _) in lines) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
