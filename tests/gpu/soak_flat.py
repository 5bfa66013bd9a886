#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Whether a soak run stayed flat: reads the `sample` lines of event logs
(GDRHOOK_SAMPLE_MS) and, for the process with the most samples, compares
the second half of the run after warm-up with the first half: pinned bytes,
open fds and resident memory must not grow beyond a small allowance. A leak
of one pin, fd or buffer per step would show as a steady climb.

Prints one line per measure (start of the run, end of warm-up, means of
both halves, maximum, last) and exits non-zero if any measure grew.

usage: soak_flat.py LOG... [--warmup SECONDS]"""
import argparse
import json
import statistics
import sys
from collections import defaultdict

# measure -> growth allowed between the halves' means (absolute, relative)
ALLOWED = {
    "pinned_bytes": (64 << 20, 0.10),
    "fds": (4, 0.10),
    "rss_bytes": (64 << 20, 0.05),
}


def read_samples(paths):
    by_pid = defaultdict(list)
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                if '"sample"' not in line:  # cheap filter before parsing
                    continue
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if event.get("ev") == "sample":
                    by_pid[event["pid"]].append(event)
    return by_pid


def describe(value, measure):
    return f"{value / (1 << 20):.1f} MiB" if measure.endswith("_bytes") else f"{value:.1f}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds left out")
    args = parser.parse_args()
    by_pid = read_samples(args.logs)
    if not by_pid:
        print("soak_flat: no sample lines (was GDRHOOK_SAMPLE_MS set?)")
        return 1
    pid, samples = max(by_pid.items(), key=lambda item: len(item[1]))
    samples.sort(key=lambda e: e["ts_ns"])
    t0 = samples[0]["ts_ns"]
    steady = [e for e in samples if (e["ts_ns"] - t0) / 1e9 >= args.warmup]
    duration = (samples[-1]["ts_ns"] - t0) / 1e9
    print(f"soak_flat: pid {pid}, {len(samples)} samples over {duration:.0f} s, "
          f"{len(steady)} after {args.warmup:.0f} s of warm-up")
    if len(steady) < 10:
        print("soak_flat: too few samples after warm-up")
        return 1
    half = len(steady) // 2
    failures = 0
    for measure, (absolute, relative) in ALLOWED.items():
        values = [e.get(measure) for e in steady]
        if any(v is None for v in values):
            print(f"  {measure}: missing from the samples")
            failures += 1
            continue
        first = statistics.mean(values[:half])
        second = statistics.mean(values[half:])
        growth = second - first
        allowed = max(absolute, relative * first)
        ok = growth <= allowed
        failures += not ok
        print(f"  {measure:13} start {describe(samples[0][measure], measure)}, after warm-up "
              f"{describe(values[0], measure)}; mean {describe(first, measure)} then "
              f"{describe(second, measure)} (growth {describe(growth, measure)}, allowed "
              f"{describe(allowed, measure)}); max {describe(max(values), measure)}, last "
              f"{describe(values[-1], measure)}: {'flat' if ok else 'GROWS'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
