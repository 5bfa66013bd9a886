# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The table of tests/gpu/bench_ab.sh: per point, the median over the
rounds of each build's median lookup time, and their ratio.

usage: bench_ab.py OUT_DIR ROUNDS"""
import glob
import json
import statistics
import sys


def medians(out, side, rounds):
    """{(cache, pattern, entries, threads): [median_ns of each round]}"""
    points = {}
    memory = "?"
    for round_number in range(1, rounds + 1):
        # one file per process of the round (bench_ab.sh: by thread count)
        files = sorted(glob.glob(f"{out}/{side}.{round_number}.*json"))
        if not files:
            raise SystemExit(f"bench_ab.py: no {out}/{side}.{round_number}.*json")
        for path in files:
            with open(path) as f:
                run = json.load(f)
            memory = run.get("memory", memory)
            for point in run["lookups"]:
                key = (point["cache"], point["pattern"], point["entries"], point["threads"])
                points.setdefault(key, []).append(point["median_ns"])
    return points, memory


def main(out, rounds):
    previous, memory = medians(out, "previous", rounds)
    this, _ = medians(out, "this", rounds)
    print(f"lookup medians over {rounds} alternating rounds, {memory} memory (ns; this/previous)")
    print(f"{'cache':16} {'pattern':7} {'entries':>7} {'threads':>7} {'previous':>9} {'this':>9} {'ratio':>6}")
    ratios = []
    for key in sorted(previous):
        if key not in this:
            print(f"{' '.join(map(str, key))}: missing from this build's run")
            return 1
        before, after = statistics.median(previous[key]), statistics.median(this[key])
        ratio = after / before if before else float("nan")
        ratios.append(ratio)
        # the spread of this side's rounds: a ratio inside it is noise
        spread = f"this {min(this[key]):.2f}..{max(this[key]):.2f}, previous {min(previous[key]):.2f}..{max(previous[key]):.2f}"
        print(f"{key[0]:16} {key[1]:7} {key[2]:7} {key[3]:7} {before:9.2f} {after:9.2f} {ratio:6.3f}  ({spread})")
    print(f"geometric mean of the ratios: {statistics.geometric_mean(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
