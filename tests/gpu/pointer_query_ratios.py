#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The pointer-query figure of tests/gpu/bench.sh: two gdrhook-bench JSON
files of the same sweep (--caches gdrhook.lookup,tagcheck,query), one run
plain and one under the shim, printed as ratios per pattern and entry
count: the tag check's driver call alone (`query`) and the tag check of a
cache (`tagcheck`), plain over hooked; beside them the lookup's own ratio
(the plain tag check over gdrhook.lookup), the gain the shim's own cache
gives a library that drops the tag check.

usage: pointer_query_ratios.py PLAIN.json HOOKED.json"""
import json
import sys


def medians(path):
    with open(path) as f:
        data = json.load(f)
    return {(r["cache"], r["pattern"], r["entries"]): r["median_ns"]
            for r in data["lookups"] if r["threads"] == 1}


def ratio(a, b):
    return f"{a / b:.1f}x" if a and b else "-"


def main():
    plain, hooked = medians(sys.argv[1]), medians(sys.argv[2])
    print("pointer queries, 1 thread, median ns per call (plain / hooked = ratio)")
    print(f"{'pattern':8} {'entries':>7}  {'query plain':>11} {'hooked':>7} {'ratio':>7}  "
          f"{'tagcheck plain':>14} {'hooked':>7} {'ratio':>7}  {'lookup':>7} {'tagcheck/lookup':>15}")
    for (cache, pattern, entries) in sorted(k for k in plain if k[0] == "query"):
        qp, qh = plain[(cache, pattern, entries)], hooked.get((cache, pattern, entries), 0)
        tp = plain.get(("tagcheck", pattern, entries), 0)
        th = hooked.get(("tagcheck", pattern, entries), 0)
        lookup = plain.get(("gdrhook.lookup", pattern, entries), 0)
        print(f"{pattern:8} {entries:>7}  {qp:>11.1f} {qh:>7.1f} {ratio(qp, qh):>7}  "
              f"{tp:>14.1f} {th:>7.1f} {ratio(tp, th):>7}  {lookup:>7.1f} {ratio(tp, lookup):>15}")


if __name__ == "__main__":
    main()
