#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Counts what an event log shows, for tests/gpu/run.sh (which imports it).

usage: count_events.py LOG... [--window] [--list]
Prints one JSON object: successful frees and ctx teardowns by API, failed
frees, allocations, and with --window only the events between the two
marker allocations of tests/gpu/marker.py (by seq, per process). Pins,
unpins and errors are counted over the whole logs, window or not: whether
every pin was released is a question about the whole run.
--list prints the (windowed) successful frees instead, one a line."""
import json
import sys
from collections import Counter

MARKER_SIZE = 3 * 1024 * 1024 + 7 * 4096


def load(paths):
    """Every event of the logs, by process and seq. A line that is not
    JSON (a process killed mid-write) is skipped; `gdrhook log check`
    reports it."""
    events = []
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass
    events.sort(key=lambda e: (e["pid"], e["seq"]))
    return events


def in_window(events):
    """The events between each process's first marker free and its second
    marker alloc; a process without both markers contributes none."""
    kept = []
    by_pid = {}
    for e in events:
        by_pid.setdefault(e["pid"], []).append(e)
    for evs in by_pid.values():
        # By kind too: a pin of the marker names the same api and size.
        marks = [i for i, e in enumerate(evs)
                 if e["ev"] == "free" and e["size"] == MARKER_SIZE and e["api"] == "cuMemFree_v2"]
        allocs = [i for i, e in enumerate(evs)
                  if e["ev"] == "alloc" and e["size"] == MARKER_SIZE and e["api"] == "cuMemAlloc_v2"]
        if len(marks) >= 1 and len(allocs) >= 2:
            kept += evs[marks[0] + 1 : allocs[1]]
    return kept


def is_verify_finding(e):
    return e["ev"] == "error" and e.get("msg", "").startswith("verify")


def count(events, window=False):
    """The figures run.sh checks, as a dict (see the module's docstring)."""
    whole = events
    if window:
        events = in_window(events)
    ok = [e for e in events if e.get("rc", 0) == 0]
    frees = Counter(e["api"] for e in ok if e["ev"] == "free")
    teardowns = [e for e in ok if e["ev"] == "ctx_destroy"]
    unpins = [e for e in whole if e["ev"] == "unpin" and e.get("rc", 0) == 0 and "msg" not in e]
    return {
        "frees": sum(frees.values()),
        "frees_by_api": dict(frees),
        "failed_frees": sum(1 for e in events if e["ev"] == "free" and e.get("rc", 0) != 0),
        "ctx_destroy": len(teardowns),
        "ctx_destroy_bytes": sum(e["size"] for e in teardowns),
        "allocs": sum(1 for e in ok if e["ev"] == "alloc"),
        "freed_bytes": sum(e["size"] for e in ok if e["ev"] == "free"),
        "unmapped_bytes": sum(e["size"] for e in ok if e["ev"] == "free" and e["api"] == "cuMemUnmap"),
        "releases": frees.get("cuMemRelease", 0),
        "unmaps": frees.get("cuMemUnmap", 0),
        "maps": sum(1 for e in ok if e["ev"] == "alloc" and e["api"] == "cuMemMap"),
        "pool_trims": frees.get("cuMemPoolTrimTo", 0),
        "ipc_closes": frees.get("cuIpcCloseMemHandle", 0),
        "events": len(events),
        # whole logs
        "pins": sum(1 for e in whole if e["ev"] == "pin" and e.get("rc", 0) == 0),
        "unpins": len(unpins),
        "unpins_invalidated": sum(1 for e in unpins if e.get("reason") == "invalidated"),
        "failed_unpins": sum(1 for e in whole if e["ev"] == "unpin" and "msg" in e),
        "revokes": sum(1 for e in whole if e["ev"] == "revoke"),
        "verify_findings": sum(1 for e in whole if is_verify_finding(e)),
        "other_errors": sum(1 for e in whole if e["ev"] == "error" and not is_verify_finding(e)),
        "pids": len({e["pid"] for e in whole}),
    }


def main(argv):
    paths = [a for a in argv if not a.startswith("--")]
    window = "--window" in argv
    events = load(paths)
    if "--list" in argv:
        for e in in_window(events) if window else events:
            if e["ev"] == "free" and e.get("rc", 0) == 0:
                print(e["api"], e["addr"], e["size"])
        return 0
    print(json.dumps(count(events, window)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
