#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Runs gdrhook-bench with tiny sizes and checks its --json document: every
row the options ask for is there, with every field, of the right type, and
no lookup missed; and where the driver's cuInit fails, it says so and runs
on host memory. Asserts nothing about speed.

usage: check_bench_json.py PATH/TO/gdrhook-bench [--expect-ucx]
(with LD_LIBRARY_PATH at the fake driver, as meson test sets it)"""
import json
import os
import subprocess
import sys

ENTRIES = [16, 64]
THREADS = [1, 2]
PATTERNS = ["hot", "random"]
PRODUCERS = [1, 2]
UNPIN_BACKENDS = ["eventfd", "none"]
GAPS = [0, 40000]
TARGETS = ["hot_median_ns", "hot_threads_vs_tagcheck", "hot_vs_tagcheck", "hot_vs_ucs_rcache",
           "random_vs_ucs_rcache", "hot_scaling", "random_scaling"]
ROUNDS = 3

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def number(row, field, where):
    value = row.get(field)
    check(isinstance(value, (int, float)) and not isinstance(value, bool),
          f"{where}: {field} is {value!r}, not a number")
    return value if isinstance(value, (int, float)) else 0


def check_sweep_targets(bench):
    """--rounds 0: the lookup goals come from the sweep, with no rounds."""
    command = [bench, "--json", "--seconds", "0.02", "--entries", "16", "--threads", "1,2",
               "--caches", "gdrhook.lookup,tagcheck", "--no-queue", "--no-unpin",
               "--rounds", "0"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=100)
    if run.returncode != 0:
        failures.append(f"{' '.join(command)}: exit {run.returncode}")
        return
    targets = json.loads(run.stdout).get("targets", {})
    check(targets.get("rounds") == 0, f"--rounds 0: targets.rounds {targets.get('rounds')}")
    for name in ["hot_median_ns", "hot_threads_vs_tagcheck", "hot_scaling"]:
        t = targets.get(name, {})
        check(isinstance(t.get("value"), (int, float)) and t.get("rounds") == [],
              f"--rounds 0: target {name} is {t!r}, expected a value and no rounds")


def check_without_cuda(bench):
    """A driver whose cuInit fails: the bench says so and runs on host memory."""
    command = [bench, "--seconds", "0.02", "--entries", "16", "--threads", "1",
               "--caches", "tagcheck", "--no-queue", "--no-unpin", "--rounds", "0"]
    env = dict(os.environ, FAKECUDA_FAIL="cuInit:1:100")
    run = subprocess.run(command, capture_output=True, text=True, timeout=100, env=env)
    check(run.returncode == 0, f"cuInit failing: {' '.join(command)}: exit {run.returncode}")
    said = "no CUDA context (cuInit or the primary context failed): tag check skipped, host memory"
    check(said in run.stdout.splitlines(),
          f"cuInit failing: no line '{said}' in:\n{run.stdout}{run.stderr}")


def main():
    bench = sys.argv[1]
    expect_ucx = "--expect-ucx" in sys.argv[2:]
    command = [bench, "--json", "--seconds", "0.02",
               "--entries", ",".join(map(str, ENTRIES)),
               "--threads", ",".join(map(str, THREADS)),
               "--queue-producers", ",".join(map(str, PRODUCERS)),
               "--queue-events", "20000",
               "--unpin-backends", ",".join(UNPIN_BACKENDS), "--unpin-frees", "64",
               "--rounds", str(ROUNDS)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=100)
    if run.returncode != 0:
        print(f"{' '.join(command)}: exit {run.returncode}\n{run.stderr}")
        return 1
    try:
        doc = json.loads(run.stdout)
    except json.JSONDecodeError as e:
        print(f"not JSON ({e}):\n{run.stdout}")
        return 1

    check(doc.get("memory") == "driver",
          f"memory is {doc.get('memory')!r}: the fake driver was not found (LD_LIBRARY_PATH?)")
    check(isinstance(doc.get("device"), str) and doc["device"], "device: no name")
    for field in ["cpus", "clock_read_ns", "batch_hits", "hit_bytes", "buffer_bytes", "seconds"]:
        number(doc, field, "document")
    check(doc.get("ucx") is expect_ucx, f"ucx is {doc.get('ucx')!r}, expected {expect_ucx}")

    caches = ["gdrhook.lookup", "gdrhook.get_put", "tagcheck"] + (
        ["ucs_rcache"] if expect_ucx else [])
    rows = {}
    for row in doc.get("lookups", []):
        key = (row.get("cache"), row.get("pattern"), row.get("entries"), row.get("threads"))
        check(key not in rows, f"lookup row {key} twice")
        rows[key] = row
    for cache in caches:
        for pattern in PATTERNS:
            for entries in ENTRIES:
                for threads in THREADS:
                    key = (cache, pattern, entries, threads)
                    row = rows.pop(key, None)
                    if row is None:
                        failures.append(f"lookup row {key} missing")
                        continue
                    for field in ["median_ns", "p99_ns", "mhits_per_s"]:
                        check(number(row, field, str(key)) > 0, f"{key}: {field} not > 0")
                    check(number(row, "hits", str(key)) > 0, f"{key}: no hits timed")
                    check(row.get("misses") == 0, f"{key}: {row.get('misses')} lookups missed")
                    # The cores (core_clock.h): a clock and a width a core
                    # of today could have, not counts off by a chain's
                    # length or its loop's; eight chains retire two adds a
                    # cycle at least, on a core shared with a hyperthread.
                    ghz = number(row, "core_ghz", str(key))
                    check(0.4 <= ghz <= 8, f"{key}: core_ghz {ghz}, not a core's clock")
                    width = number(row, "core_adds_per_cycle", str(key))
                    check(1.5 <= width <= 8, f"{key}: core_adds_per_cycle {width}, not a core's width")
    check(not rows, f"unexpected lookup rows: {sorted(rows)}")

    queue = {row.get("producers"): row for row in doc.get("queue", [])}
    check(sorted(queue) == PRODUCERS, f"queue rows for producers {sorted(queue)}")
    for producers, row in queue.items():
        check(number(row, "mevents_per_s", f"queue {producers}") > 0,
              f"queue {producers}: no throughput")

    unpins = {(row.get("backend"), row.get("gap_ns")): row for row in doc.get("unpin_delay", [])}
    expected = [(b, g) for b in UNPIN_BACKENDS for g in GAPS]
    check(sorted(unpins) == sorted(expected), f"unpin_delay rows {sorted(unpins)}")
    for key, row in unpins.items():
        for field in ["p50_us", "p90_us", "p99_us", "max_us", "free_path_p50_us",
                      "free_path_p99_us"]:
            number(row, field, f"unpin {key}")
        check(row.get("frees") == 64, f"unpin {key}: frees {row.get('frees')}")
        check(row.get("unpins") == row.get("frees"),
              f"unpin {key}: {row.get('unpins')} unpins for {row.get('frees')} frees")
        check(row.get("p50_us", 0) <= row.get("p99_us", 0) <= row.get("max_us", 0),
              f"unpin {key}: percentiles out of order")

    targets = doc.get("targets", {})
    check(targets.get("entries") == max(ENTRIES), f"targets.entries {targets.get('entries')}")
    check(targets.get("threads") == max(THREADS), f"targets.threads {targets.get('threads')}")
    check(targets.get("rounds") == ROUNDS, f"targets.rounds {targets.get('rounds')}")
    for name in TARGETS:
        t = targets.get(name)
        if not isinstance(t, dict):
            failures.append(f"target {name} missing")
            continue
        computable = expect_ucx or "ucs_rcache" not in name
        rounds = t.get("rounds")
        if computable:
            value = number(t, "value", f"target {name}")
            check(isinstance(t.get("met"), bool), f"target {name}: met {t.get('met')!r}")
            # The goal's value is the median of its rounds' values.
            check(isinstance(rounds, list) and len(rounds) == ROUNDS,
                  f"target {name}: rounds {rounds!r}, expected {ROUNDS} values")
            if isinstance(rounds, list) and len(rounds) == ROUNDS:
                middle = sorted(rounds)[ROUNDS // 2]
                check(abs(value - middle) <= 0.0015,
                      f"target {name}: value {value} is not the median of {rounds}")
            # Each round's core of gdrhook.lookup's point, [GHz, adds a cycle].
            cores = t.get("round_cores")
            check(isinstance(cores, list) and len(cores) == ROUNDS and
                  all(isinstance(c, list) and len(c) == 2 and 0.4 <= c[0] <= 8 and
                      1.5 <= c[1] <= 8 for c in cores),
                  f"target {name}: round_cores {cores!r}, expected {ROUNDS} [GHz, adds] pairs")
        else:
            check(t.get("value") is None and t.get("met") is None,
                  f"target {name}: a value without ucs_rcache")
            check(rounds == [], f"target {name}: rounds {rounds!r} without ucs_rcache")
        check(isinstance(t.get("goal"), str) and isinstance(t.get("what"), str),
              f"target {name}: goal or what missing")

    check_sweep_targets(bench)
    check_without_cuda(bench)
    check(subprocess.run([bench, "--rounds", "-1"], capture_output=True, timeout=30).returncode
          == 2, "--rounds -1: not refused with exit 2")

    for failure in failures:
        print(failure)
    print(f"{len(failures)} problem(s) in the JSON of: {' '.join(command)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
