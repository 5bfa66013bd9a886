#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Counts what an event log shows, for tests/gpu/run.sh.

usage: count_events.py LOG... [--window]
Prints one JSON object: successful frees and ctx teardowns by API, failed
frees, allocations, and with --window only the events between the two
marker allocations of tests/gpu/marker.py (by seq, per process)."""
import json
import sys
from collections import Counter

MARKER_SIZE = 3 * 1024 * 1024 + 7 * 4096

args = [a for a in sys.argv[1:] if not a.startswith("--")]
window = "--window" in sys.argv
events = []
for path in args:
    with open(path) as f:
        events += [json.loads(line) for line in f if line.strip()]
events.sort(key=lambda e: (e["pid"], e["seq"]))

if window:
    kept = []
    by_pid = {}
    for e in events:
        by_pid.setdefault(e["pid"], []).append(e)
    for pid, evs in by_pid.items():
        # By kind too: a pin of the marker names the same api and size.
        marks = [i for i, e in enumerate(evs)
                 if e["ev"] == "free" and e["size"] == MARKER_SIZE and e["api"] == "cuMemFree_v2"]
        allocs = [i for i, e in enumerate(evs)
                  if e["ev"] == "alloc" and e["size"] == MARKER_SIZE and e["api"] == "cuMemAlloc_v2"]
        if len(marks) >= 1 and len(allocs) >= 2:
            kept += evs[marks[0] + 1 : allocs[1]]
    events = kept

if "--list" in sys.argv:
    for e in events:
        if e["ev"] == "free" and e["rc"] == 0:
            print(e["api"], e["addr"], e["size"])
    sys.exit(0)

frees = Counter(e["api"] for e in events if e["ev"] == "free" and e["rc"] == 0)
teardowns = Counter(e["api"] for e in events if e["ev"] == "ctx_destroy" and e["rc"] == 0)
print(json.dumps({
    "frees": sum(frees.values()),
    "frees_by_api": dict(frees),
    "failed_frees": sum(1 for e in events if e["ev"] == "free" and e["rc"] != 0),
    "ctx_destroy": sum(teardowns.values()),
    "allocs": sum(1 for e in events if e["ev"] == "alloc" and e["rc"] == 0),
    "freed_bytes": sum(e["size"] for e in events if e["ev"] == "free" and e["rc"] == 0),
    "unmapped_bytes": sum(e["size"] for e in events if e["ev"] == "free" and e["api"] == "cuMemUnmap" and e["rc"] == 0),
    "releases": frees.get("cuMemRelease", 0),
    "unmaps": frees.get("cuMemUnmap", 0),
    "events": len(events),
}))
