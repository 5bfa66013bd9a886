#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The tag-check figure of tests/gpu/bench.sh: tag_check's output run
plain and under the shim, as ratios per pattern, each with the goal's
verdict (docs/performance.md: the answer >= 20x cheaper than the
driver's). Two ratios: per use of the guide's cache (the tag check plus
the cache's own hash lookup, which the shim does not change), and the tag
check's own cost (a use minus a use of the same cache without the check).

usage: tag_check_ratios.py PLAIN_OUTPUT HOOKED_OUTPUT"""
import re
import sys

GOAL = 20.0


def figures(path):
    """{pattern: {per_use_ns, cache_only_ns, check_ns}}"""
    out = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"pattern=(\w+) (.*)", line)
            if m:
                out[m[1]] = {k: float(v) for k, v in re.findall(r"(\w+)=([-\d.]+)", m[2])}
    return out


def verdict(plain, hooked):
    if plain <= 0 or hooked <= 0:
        return "-", "n/a"
    r = plain / hooked
    return f"{r:.1f}x", "met" if r >= GOAL else "NOT"


def main():
    plain, hooked = figures(sys.argv[1]), figures(sys.argv[2])
    print("tag_check, 1 thread, median ns a use (plain / hooked = ratio, goal >= 20x)")
    for pattern in plain:
        p, h = plain[pattern], hooked.get(pattern, {})
        for what, key in (("per use", "per_use_ns"), ("check alone", "check_ns")):
            pv, hv = p.get(key, 0), h.get(key, 0)
            r, v = verdict(pv, hv)
            print(f"  {pattern:7} {what:12} plain {pv:7.1f} hooked {hv:7.1f}  {r:>7}  {v}")
        print(f"  {pattern:7} {'cache only':12} plain {p.get('cache_only_ns', 0):7.1f} "
              f"hooked {h.get('cache_only_ns', 0):7.1f}")


if __name__ == "__main__":
    main()
