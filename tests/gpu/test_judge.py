#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The GPU table's row judge (table_row.py) on recorded output: what two
runs of one program differ in by nature must pass, anything else must
fail. Needs no GPU.

judge_cases/ holds the plain and hooked stdout/stderr of the table's
`ddp_nccl` row (torchrun with NCCL on 2 H200s, driver 580.159.04), as run:
  torchrun_warnings/  torchrun's glog-style warnings (timestamp, pid), the
                      two ranks' "expect_min" lines interleaved either way
  nccl_info/          the same with NCCL_DEBUG=INFO: 142 NCCL info lines on
                      stdout with hosts, pids, ports, addresses and timings
The failing cases are those recordings with one line added, changed,
dropped or moved, as a real difference would show up.

The overhead row's judge (overhead_judge.py) on judge_cases/overhead/:
the two lines it reads of alloc_free_ab's output from five processes
under d160e43's shim on one H200 (2026-12-02), as run, and those figures
scaled down to meet the goal, with one process, or the median, put back
over it. And bench_verdicts.py's verdict on the coherence churn, on
churn_ab.sh's summary line: the 8 threads' p99 within its goal and within
twice the single thread's; and its lookup verdicts, which name the core
the point ran on."""
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import bench_verdicts  # noqa: E402
import overhead_judge  # noqa: E402
import table_row  # noqa: E402

CASES = os.path.join(here, "judge_cases")


def recorded(case, name):
    with open(os.path.join(CASES, case, name), errors="replace") as f:
        return f.read()


def same(plain, hooked, processes, stream):
    if stream == "err":
        return table_row.program_stderr(plain, processes) == \
            table_row.program_stderr(hooked, processes)
    return table_row.program_lines(plain, processes) == table_row.program_lines(hooked, processes)


def with_line(text, line, after=0):
    lines = text.splitlines()
    lines.insert(after, line)
    return "\n".join(lines) + "\n"


def replaced(text, old, new):
    assert old in text, f"the recording no longer holds {old!r}"
    return text.replace(old, new, 1)


def without_first(text, needle):
    lines = text.splitlines()
    lines.remove(next(line for line in lines if needle in line))
    return "\n".join(lines) + "\n"


def cases():
    """(what, plain, hooked, processes, stream, must pass)"""
    warn_plain = recorded("torchrun_warnings", "plain.err")
    warn_hooked = recorded("torchrun_warnings", "hooked.err")
    info_plain = recorded("nccl_info", "plain.out")
    info_hooked = recorded("nccl_info", "hooked.out")
    out_plain = recorded("torchrun_warnings", "plain.out")
    yield ("torchrun's warnings: other timestamps and pids, ranks interleaved otherwise",
           warn_plain, warn_hooked, 2, "err", True)
    yield ("NCCL_DEBUG=INFO stdout: other hosts, pids, ports, addresses, timings",
           info_plain, info_hooked, 2, "out", True)
    yield ("NCCL_DEBUG=INFO stderr", recorded("nccl_info", "plain.err"),
           recorded("nccl_info", "hooked.err"), 2, "err", True)
    yield ("an error line only in the hooked run",
           warn_plain, with_line(warn_hooked, "RuntimeError: CUDA error: invalid argument", 5),
           2, "err", False)
    yield ("a PyTorch warning only in the hooked run",
           warn_plain, with_line(warn_hooked, "[rank1]:[W1127 15:08:52.123456789 "
                                 "CUDACachingAllocator.cpp:1012] Warning: cudaFree failed", 6),
           2, "err", False)
    yield ("a torchrun warning whose words differ",
           warn_plain, replaced(warn_hooked, "OMP_NUM_THREADS", "MKL_NUM_THREADS"), 2, "err", False)
    yield ("a warning raised to an error (W to E)",
           warn_plain, replaced(warn_hooked, "W1127", "E1127"), 2, "err", False)
    yield ("one rank's expect line missing",
           warn_plain, without_first(warn_hooked, "expect_min"), 2, "err", False)
    yield ("an NCCL WARN line only in the hooked run",
           info_plain, with_line(info_hooked, "vm:1497:1503 [1] NCCL WARN Cuda failure 1 "
                                 "'invalid argument'", 40), 2, "out", False)
    yield ("an NCCL info line whose words differ",
           info_plain, replaced(info_hooked, "Using network Socket", "Using network IB"),
           2, "out", False)
    yield ("an NCCL info line missing",
           info_plain, without_first(info_hooked, "Init COMPLETE"), 2, "out", False)
    yield ("the weights' checksum differs",
           out_plain, replaced(out_plain, "checksum=", "checksum=1"), 2, "out", False)
    # One process's lines keep their order: a swap is a difference there.
    lines = warn_plain.splitlines()
    swapped = "\n".join([lines[1], lines[0]] + lines[2:]) + "\n"
    yield ("one process's lines in another order", warn_plain, swapped, 1, "err", False)
    yield ("several processes' lines in another order", warn_plain, swapped, 2, "err", True)


def scaled(output, factor, ns_factor=None):
    """One process's figures multiplied by `factor` (its added ns by
    `ns_factor` where given: a slower pair, the same ns a smaller share)."""
    def times(m):
        f = ns_factor if ns_factor is not None and m.group(1).startswith("added") else factor
        return f"{m.group(1)}={float(m.group(2)) * f:.3f}"
    return re.sub(r"(overhead_percent|added_ns_trimmed_mean)=([-\d.]+)", times, output)


def overhead_cases():
    """(what, outputs of the processes, must pass)"""
    recorded_runs = overhead_judge.split_processes(recorded("overhead", "alloc_free_ab.out"))
    assert len(recorded_runs) == 5
    under = [scaled(o, 0.15) for o in recorded_runs]  # 0.03..0.155%, 17..98 ns
    yield ("overhead: five processes as recorded (median 0.383%, 236 ns)", recorded_runs, False)
    yield ("overhead: every process under both goals", under, True)
    one_over = under[:3] + [scaled(recorded_runs[3], 0.5)] + under[4:]  # 0.247%, 149 ns
    yield ("overhead: the median under, one process over 0.2%", one_over, False)
    slow = [scaled(o, 0.15, 0.6) for o in recorded_runs]  # 141 ns, 0.03..0.155%
    yield ("overhead: every process under 0.2%, the median over 120 ns", slow, False)
    yield ("overhead: a process without its figure", under[:4] + ["pairs=40000\n"], False)


def churn_cases():
    """(what, churn_ab.sh's summary, must pass)"""
    def line(p99, one):
        return f"shim 0: 8 threads p50 40.9 us, p99 {p99} us; 1 thread p99 {one} us; 8/1 p99 x\n"
    yield ("churn: p99 within 150 us and twice one thread's", line(140.0, 75.0), True)
    yield ("churn: p99 over 150 us", line(219.6, 120.0), False)
    yield ("churn: p99 within 150 us, over twice one thread's", line(140.0, 19.7), False)
    yield ("churn: no summary line", "churn8 shim=0 threads=8 unpins=0\n", False)


def core_cases():
    """(what, whether the verdict says it, the verdict, must): a lookup
    verdict names the core gdrhook.lookup's point ran on (round_cores):
    the median of its rounds' adds a cycle, their range and the clock."""
    shared = {"value": 2.3, "rounds": [2.2, 2.3, 4.0],
              "round_cores": [[2.6, 4.4], [2.7, 4.2], [2.5, 3.1]]}
    met, why = bench_verdicts.bench_verdict({"hot_median_ns": shared}, "hot_median_ns", "<=", 3)
    yield ("hot hit: its core said", met and "; its core: 4.20 adds a cycle [3.10 .. 4.40], "
           "2.60 GHz" in why, why, True)
    older = {"value": 2.3, "rounds": [2.3]}
    met, why = bench_verdicts.bench_verdict({"hot_median_ns": older}, "hot_median_ns", "<=", 3)
    yield ("hot hit, an older gdrhook-bench's JSON: no core said", met and "core" not in why, why,
           True)


def verdicts():
    """(what, whether the judge passes it, whether it must, the judge's
    reason where it gives one)"""
    yield from core_cases()
    for what, outputs, must_pass in overhead_cases():
        yield (what, *overhead_judge.verdict(outputs), must_pass)
    for what, text, must_pass in churn_cases():
        yield (what, *bench_verdicts.churn_verdict(text), must_pass)
    for what, plain, hooked, processes, stream, must_pass in cases():
        yield what, same(plain, hooked, processes, stream), None, must_pass


def main():
    failures = 0
    for what, passed, why, must_pass in verdicts():
        passed = bool(passed)
        ok = passed == must_pass
        failures += not ok
        print(f"{'ok  ' if ok else 'BAD '} {what}: the judge {'passes' if passed else 'fails'}"
              f"{'' if ok else ' (it must ' + ('pass' if must_pass else 'fail') + ')'}"
              f"{'' if why is None else f': {why}'}")
    print(f"{failures} wrong verdict(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
