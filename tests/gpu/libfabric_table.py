#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The table and the verdict of tests/gpu/libfabric.sh, from what its runs
of fabtests' fi_rdm_pingpong left.

usage: libfabric_table.py OUT_DIR

OUT_DIR/runs.txt: one line per pair of processes, "SETUP MODE ROUND
server=RC client=RC". OUT_DIR/SETUP/MODE.ROUND.client: the client's
stdout (fabtests' table: bytes, iters, total, time, MB/sec, usec/xfer,
Mxfers/sec); MODE.ROUND.events.PID.jsonl: gdrhook's logs of the hooked
modes, whose `queries` lines count the pointer queries answered from the
table and forwarded to the driver. openmpi_table.py judges
tests/gpu/openmpi.sh's runs with the same functions: main() takes the
verdict's name and the reader of a run's latencies.

PASS when every run exited 0 (fabtests' -v checked the data), verify mode
found no difference, and in each setup the hooked runs sent fewer queries
to the driver than the program makes (the count mode's forwarded, every
query sent there), or none where the program makes none; at least one
setup must make some. The latencies are shown, not judged.
"""
import json
import statistics
import sys
from pathlib import Path

VERIFY_MESSAGE = "verify: a pointer query answered from the table differs"


def size_bytes(cell):
    """fabtests writes 1024 as 1k, 1048576 as 1m; None for a non-size."""
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(cell[-1:], 1)
    digits = cell[:-1] if scale > 1 else cell
    return int(digits) * scale if digits.isdigit() else None


def latencies(path):
    """{size: usec per transfer} from a fabtests client's table (none
    where the client left no output)."""
    rows = {}
    if not path.exists():
        return rows
    for line in path.read_text(errors="replace").splitlines():
        cells = line.split()
        if len(cells) == 7 and size_bytes(cells[0]) is not None:
            rows[size_bytes(cells[0])] = float(cells[5])
    return rows


def query_counts(directory, name):
    """(answered, forwarded, differences) over a run's gdrhook logs."""
    answered = forwarded = differences = 0
    for log in directory.glob(f"{name}.events.*.jsonl"):
        for line in log.read_text(errors="replace").splitlines():
            if VERIFY_MESSAGE in line:
                differences += 1
            if '"ev":"queries"' not in line:
                continue
            event = json.loads(line)
            answered += event["answered"]
            forwarded += event["forwarded"]
    return answered, forwarded, differences


def client_latencies(directory, name):
    """{size: usec} of a run, from its fabtests client's table."""
    return latencies(directory / f"{name}.client")


def runs(out):
    """[(setup, mode, round, ok)] from runs.txt: ok when every process
    named on the line (NAME=RC) exited 0."""
    result = []
    for line in (out / "runs.txt").read_text().splitlines():
        setup, mode, round_, *codes = line.split()
        ok = bool(codes) and all(code.endswith("=0") for code in codes)
        result.append((setup, mode, round_, ok))
    return result


def latency_rows(directory, rounds, read):
    """One line per size: median plain and hooked usec, and their ratio."""
    per_mode = {"plain": {}, "hooked": {}}
    for mode, table in per_mode.items():
        for round_ in rounds:
            for size, usec in read(directory, f"{mode}.{round_}").items():
                table.setdefault(size, []).append(usec)
    lines = []
    for size in sorted(per_mode["plain"]):
        plain = per_mode["plain"][size]
        hooked = per_mode["hooked"].get(size, [])
        if not plain or not hooked:
            continue
        p, h = statistics.median(plain), statistics.median(hooked)
        lines.append(
            f"  {size:>6} B  plain {p:8.2f} us  hooked {h:8.2f} us  hooked/plain "
            f"{h / p:.3f}  (plain {min(plain):.2f}-{max(plain):.2f}, "
            f"hooked {min(hooked):.2f}-{max(hooked):.2f}, {len(plain)} rounds)"
        )
    return lines


def judge_setup(out, setup, setup_runs, read):
    """Prints a setup's table; returns whether it passed and whether its
    program asked the driver anything."""
    directory = out / setup
    ok = all(r[3] for r in setup_runs)
    rounds = sorted({r[2] for r in setup_runs if r[1] in ("plain", "hooked")})
    print(f"{setup}: {len(setup_runs)} runs, {'all exited 0' if ok else 'SOME FAILED'}")
    print("\n".join(latency_rows(directory, rounds, read)))
    _, program_queries, _ = query_counts(directory, "count.0")
    hooked = [query_counts(directory, f"hooked.{r}") for r in rounds]
    answered, forwarded = sum(h[0] for h in hooked), sum(h[1] for h in hooked)
    v_answered, v_forwarded, differences = query_counts(directory, "verify.0")
    print(f"  driver queries, one run: plain {program_queries}, hooked "
          f"{forwarded / max(len(hooked), 1):.0f} (answered from the table "
          f"{answered / max(len(hooked), 1):.0f})")
    print(f"  verify: {v_answered} answered and checked, {v_forwarded} forwarded, "
          f"{differences} differed")
    per_run = forwarded / max(len(hooked), 1)
    # A setup whose program asks nothing must stay at nothing hooked; one
    # that asks must send the driver fewer.
    cut = per_run < program_queries if program_queries else per_run == 0
    return ok and differences == 0 and bool(hooked) and cut, program_queries > 0


def main(name="LIBFABRIC", read=client_latencies):
    out = Path(sys.argv[1])
    all_runs = runs(out)
    setups = sorted({r[0] for r in all_runs})
    passed, asked = True, False
    for setup in setups:
        setup_runs = [r for r in all_runs if r[0] == setup]
        setup_passed, setup_asked = judge_setup(out, setup, setup_runs, read)
        passed &= setup_passed
        asked |= setup_asked
    if not asked:
        print("no setup asked the driver a pointer query: nothing measured")
    passed &= asked
    print(f"{name}: {'PASS' if passed else 'FAIL'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
