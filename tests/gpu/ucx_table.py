#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The table and the verdict of tests/gpu/ucx_table.sh, from the outputs its
runs of tests/ucx/ucx_rcache.cpp left.

usage: ucx_table.py OUT_DIR [frameworks]

OUT_DIR/cells/SETUP-MODE.out (stdout and stderr of one run; UCX logs on
stdout) and SETUP-MODE.rc (its exit status), for SETUP in none (no
gdrhook), off, on (gdrhook with GDRHOOK_UCX=off, on) and MODE in bistro,
reloc, none (UCX_MEM_CUDA_HOOK_MODE); SETUP-MODE-early.* for the runs whose
first cache is made before the first CUDA call (--early-rcache), SETUP
none or auto.

One row per workload, UCX hook mode and setup: stale lookups of all
lookups, device memory still held after the workload's frees (MiB), ns per
cache hit, whether UCX kept its cache on and which CUDA hooks UCX says it
installed (its own log: "cuda memory hooks mode M: installed N on A API",
"failed to patch", "set external events").

PASS when, in every hook mode, every run exited 0 (or 3, UCX refused its
cache, where the run without gdrhook did too) and:
  - GDRHOOK_UCX=off gives the row without gdrhook: the same stale count,
    the same cache state, the same hooks, memory held within MEM_SLACK;
  - GDRHOOK_UCX=on: the cache on, no stale lookup, memory held at most
    MEM_SLACK over what the driver itself keeps after that free with
    nothing registered, as the run without gdrhook measured it
    (driver_kept=; a destroyed graph's memory stays in the graph pool), in
    every workload, and the driver keeping the same under gdrhook;
  - every workload allocated again at the same address at least once
    (else no lookup could be stale, and the row says nothing), and UCX
    installed CUDA hooks without gdrhook in bistro and reloc mode (else its
    CUDA module was not loaded). Failed dma-buf exports and a device without
    dma-buf are noted, not judged.
"ucx_table.py OUT_DIR frameworks" does the same for the fw-WORKLOAD-SETUP-
MODE runs of tests/gpu/ucx_frameworks.py.
The early-cache rows are shown, not judged.
"""
import os
import re
import sys

MEM_SLACK = 2 << 20
NOTES = []  # printed with the verdict, not problems
SETUPS = [("none", "no gdrhook"), ("off", "GDRHOOK_UCX=off"), ("on", "GDRHOOK_UCX=on")]
EARLY_SETUPS = [("none", "no gdrhook"), ("auto", "GDRHOOK_UCX=auto")]
MODES = ["bistro", "reloc", "none"]

PATH_LINE = re.compile(r"^path=(\S+) (.*)$")
FIELD = re.compile(r"(\w+)=(-?[0-9.]+)")
INSTALLED = re.compile(r"cuda memory hooks mode (\w+): installed (\d+) on (\w+) API")
FAILED_PATCH = re.compile(r"failed to patch '(\w+)' from (\S+)")
FAILED_INSTALL = re.compile(r"failed to install (\w+) hook for '(\w+)'")


class Run:
    def __init__(self, base):
        self.base = base
        self.exists = os.path.exists(base + ".out")
        self.text = open(base + ".out", errors="replace").read() if self.exists else ""
        try:
            self.rc = int(open(base + ".rc").read().strip())
        except (OSError, ValueError):
            self.rc = None
        self.paths = {}
        self.order = []
        for line in self.text.splitlines():
            m = PATH_LINE.match(line)
            if m:
                self.paths[m.group(1)] = {k: float(v) for k, v in FIELD.findall(m.group(2))}
                self.order.append(m.group(1))
        self.cache_on = self.rc == 0 and bool(self.paths)
        m = re.search(r"^early_rcache=(\w+)", self.text, re.M)
        self.early = m.group(1) if m else None
        self.bridge = "UCX bridge on" in self.text
        self.external = "set external events" in self.text

    def hooks(self):
        """What UCX's log says of its CUDA hooks, in a few words."""
        parts = []
        for mode, count, api in INSTALLED.findall(self.text):
            parts.append(f"{mode} {count} {api}")
        for func, lib in FAILED_PATCH.findall(self.text):
            parts.append(f"FAILED to patch {func} in {os.path.basename(lib)}")
        if not FAILED_PATCH.search(self.text):
            for mode, func in FAILED_INSTALL.findall(self.text):
                parts.append(f"FAILED {mode} {func}")
        if "cuda memory hooks are disabled by configuration" in self.text:
            parts.append("disabled by configuration")
        if not parts:
            parts.append("none")
        if self.external:
            parts.append("events external")
        return ", ".join(parts)

    def hook_counts(self):
        return sorted(INSTALLED.findall(self.text)), sorted(FAILED_PATCH.findall(self.text)) != []


def mib(n):
    return f"{max(n, 0) / (1 << 20):.1f}" if n > -(1 << 20) else f"{n / (1 << 20):.1f}"


def cells_of(run, workload):
    """stale/N, MiB held, ns per hit of one workload in one run."""
    if not run.exists:
        return ["(no run)", "", ""]
    if run.rc == 77:
        return ["skipped", "", ""]
    p = run.paths.get(workload)
    if p is None:
        return ["cache", "OFF", ""] if run.rc == 3 else [f"exit {run.rc}", "", ""]
    return [f"{int(p['stale_hits'])}/{int(p['lookups'])}", mib(p["mem_held"]),
            f"{p.get('lookup_ns', 0):.1f}"]


def print_table(get, setups, workloads):
    """One row per workload and UCX hook mode, the setups side by side;
    then what UCX said of its cache and hooks in each run. get(SETUP, MODE,
    WORKLOAD) is the run."""
    width = max([len(w) for w in workloads] + [8])
    group = " stale/N held MiB  ns/hit"
    top = " " * (width + 9) + "".join(f"  {label:<{len(group) - 2}}" for _, label in setups)
    header = f"{'workload':<{width}}  {'UCX':<7}" + "".join(" " + group for _ in setups)
    print(top)
    print(header)
    print("-" * len(header))
    for w in workloads:
        for m in MODES:
            line = f"{w:<{width}}  {m:<7}"
            for s, _ in setups:
                stale, held, ns = cells_of(get(s, m, w), w)
                line += f"  {stale:>7} {held:>8} {ns:>7}"
            print(line)
    print()
    print(f"{'UCX':<7} {'setup':<17} {'exit':>4}  cache  UCX's CUDA hooks (its own log)")
    seen = set()
    for m in MODES:
        for s, label in setups:
            for w in workloads:
                r = get(s, m, w)
                if r.base in seen:
                    continue
                seen.add(r.base)
                cache = "on" if r.cache_on else "OFF"
                if r.early is not None:
                    cache = f"first (before CUDA) {r.early}, later {cache}"
                bridge = "; gdrhook: UCX bridge on" if r.bridge else ""
                name = os.path.basename(r.base)
                print(f"{m:<7} {label:<17} {str(r.rc):>4}  {cache:<5}  {r.hooks()}{bridge}"
                      f"  [{name}]")


def driver_kept(path):
    """What the driver itself keeps after the workload's free with nothing
    registered (ucx_rcache --driver-kept), in the run without gdrhook: a
    graph's memory stays in the device's graph pool until a trim, with or
    without any cache. 0 where the run did not measure it."""
    if path is None:
        return 0
    return max(path.get("driver_kept", 0), 0)


def judge(get, workloads, missing_ok=False):
    """The acceptance, as the module's docstring says; the problems found.
    missing_ok: a run that did not happen (the script's time budget) is
    left out, not a problem."""
    problems = []
    for m in ("bistro", "reloc"):
        r = get("none", m, workloads[0]) if workloads else None
        if r is not None and r.exists and r.rc == 0 and not INSTALLED.search(r.text):
            problems.append(f"none/{m}: UCX installed no CUDA hooks without gdrhook "
                            "(was libucm_cuda loaded? see its log)")
    for m in MODES:
        for w in workloads:
            base, off, on = (get(s, m, w) for s in ("none", "off", "on"))
            where = f"{m}/{w}"
            skipped = False
            for s, r in (("none", base), ("off", off), ("on", on)):
                if not r.exists and missing_ok:
                    skipped = True
                elif not r.exists:
                    problems.append(f"{s}/{where}: no run")
                elif r.rc == 77:
                    skipped = True
                elif r.rc not in (0, 3):
                    problems.append(f"{s}/{where}: exit {r.rc} (see {r.base}.out)")
            if skipped:
                continue
            b, o, n = base.paths.get(w), off.paths.get(w), on.paths.get(w)
            # off: the row without gdrhook.
            if (o is None) != (b is None):
                problems.append(f"off/{where}: UCX's cache {'OFF' if o is None else 'on'} where "
                                f"without gdrhook it is {'OFF' if b is None else 'on'} "
                                f"(UCX's hooks: '{off.hooks()}'; without gdrhook '{base.hooks()}')")
            elif off.hook_counts() != base.hook_counts():
                problems.append(f"off/{where}: UCX's hooks '{off.hooks()}', without gdrhook "
                                f"'{base.hooks()}'")
            if o is not None and b is not None:
                if o["stale_hits"] != b["stale_hits"]:
                    problems.append(f"off/{where}: {int(o['stale_hits'])} stale, without gdrhook "
                                    f"{int(b['stale_hits'])}")
                if abs(o["mem_held"] - b["mem_held"]) > MEM_SLACK:
                    problems.append(f"off/{where}: {mib(o['mem_held'])} MiB held, without "
                                    f"gdrhook {mib(b['mem_held'])}")
            # on: never stale, memory back.
            if n is None:
                problems.append(f"on/{where}: UCX's cache OFF ({on.hooks()})")
            else:
                if n["stale_hits"] != 0:
                    problems.append(f"on/{where}: {int(n['stale_hits'])} of {int(n['lookups'])} "
                                    "stale")
                kept = driver_kept(b)
                if n["mem_held"] > kept + MEM_SLACK:
                    problems.append(f"on/{where}: {mib(n['mem_held'])} MiB still held after the "
                                    f"frees, the driver itself keeps {mib(kept)}")
                if b is not None and abs(driver_kept(n) - kept) > MEM_SLACK:
                    problems.append(f"on/{where}: the driver keeps {mib(driver_kept(n))} MiB "
                                    f"with nothing registered, without gdrhook {mib(kept)}")
            for s, p in (("none", b), ("off", o), ("on", n)):
                if p is None:
                    continue
                if p["same_address"] < 1:
                    problems.append(f"{s}/{where}: never the same address again (nothing judged)")
                if p.get("export_failed", 0):
                    NOTES.append(f"{s}/{where}: {int(p['export_failed'])} of "
                                 f"{int(p['export_failed'] + p.get('exports', 0))} dma-buf "
                                 "exports failed (those registrations held no memory)")
    # Once per problem, in order.
    return list(dict.fromkeys(problems))


def verdict(name, problems):
    for n in dict.fromkeys(NOTES):
        print("  note: " + n)
    NOTES.clear()
    for p in problems:
        print("  " + p)
    print(f"{name}: {'FAIL (%d)' % len(problems) if problems else 'PASS'}")
    return 1 if problems else 0


def main():
    out = sys.argv[1]
    what = sys.argv[2] if len(sys.argv) > 2 else "core"
    cells = os.path.join(out, "cells")
    if what == "frameworks":
        names = sorted({f[3:].split("-")[0] for f in os.listdir(cells)
                        if f.startswith("fw-") and f.endswith(".out")})
        runs = {(s, m, w): Run(os.path.join(cells, f"fw-{w}-{s}-{m}"))
                for s, _ in SETUPS for m in MODES for w in names}
        workloads = [w for w in names
                     if any(r.paths for (_, _, rw), r in runs.items() if rw == w)] or names
        get = lambda s, m, w: runs[(s, m, w)]  # noqa: E731
        print("Frameworks (tests/gpu/ucx_frameworks.py), the same setups:")
        print_table(get, SETUPS, workloads)
        print()
        return verdict("UCX TABLE, frameworks", judge(get, workloads, missing_ok=True))

    runs = {(s, m): Run(os.path.join(cells, f"{s}-{m}")) for s, _ in SETUPS for m in MODES}
    early = {(s, m): Run(os.path.join(cells, f"{s}-{m}-early")) for s, _ in EARLY_SETUPS
             for m in MODES}
    workloads = []
    for r in list(runs.values()) + list(early.values()):
        for w in r.order:
            if w not in workloads:
                workloads.append(w)
    if not workloads:
        return verdict("UCX TABLE", [f"no workload's line in any run under {cells}"])
    print_table(lambda s, m, w: runs[(s, m)], SETUPS, workloads)
    print()
    base = runs[("none", "bistro")]
    if base.paths:
        stale = [w for w, p in base.paths.items() if p["stale_hits"]]
        total = sum(int(p["stale_hits"]) for p in base.paths.values())
        lookups = sum(int(p["lookups"]) for p in base.paths.values())
        print(f"without gdrhook, bistro (UCX's default): {total} of {lookups} lookups stale, "
              f"in {', '.join(stale) or 'no workload'}")
    if any(r.exists for r in early.values()):
        print()
        print("UCX's first cache made before the first CUDA call (as ucp_init makes UCP's), "
              "not judged:")
        print_table(lambda s, m, w: early[(s, m)], EARLY_SETUPS, workloads)
    if any(re.search(r"^dmabuf=0", r.text, re.M) for r in runs.values()):
        NOTES.append("the device reports no DMA_BUF_SUPPORTED: registrations held no memory, "
                     "'held MiB' says nothing")
    print()
    return verdict("UCX TABLE", judge(lambda s, m, w: runs[(s, m)], workloads))


if __name__ == "__main__":
    sys.exit(main())
