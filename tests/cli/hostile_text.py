#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Every command's output where text of a log, of /proc or of a file name
reaches it, fed hostile bytes: ESC and CSI sequences, an OSC 8 hyperlink,
CR, BS, DEL, the C1 controls (U+0080..U+009F in UTF-8), invalid UTF-8 and
newlines. Nothing but printable ASCII and the newline may reach stdout,
stderr or a file the tool writes for a person (the epilog's summary), and
no newline of theirs may start a line of the tool's.

usage: hostile_text.py   (environment as tests/cli/e2e.sh: GDRHOOK,
GDRHOOKTEST_SHIM, GDRHOOKTEST_FAKE_DRIVER_DIR, GDRHOOKTEST_CHURN,
GDRHOOKTEST_EXEC_WRAPPER, GDRHOOKTEST_TMP)"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

TOOL = os.environ["GDRHOOK"]
EMULATOR = os.environ.get("GDRHOOKTEST_EXEC_WRAPPER", "").split()

# What a process, a log or a file name may hold. The text after each
# newline starts with INJECTED: a line of output that starts with it came
# from an unescaped newline.
HOSTILE = ("\x1b[31mred\x1b[0m \x1b]8;;http://example.invalid/\x1b\\link\x1b]8;;\x1b\\"
           "\rover\bback\x7fdel\u009b2J\u0085nel\u0090dcs\nINJECTED")
# A file's name holds no '/'; its bytes need not be UTF-8.
HOSTILE_NAME = HOSTILE.replace("/", "_").encode() + b"\xff\xfe\xc3"

checked = []


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def check_text(what, data):
    for i, byte in enumerate(data):
        if not (0x20 <= byte < 0x7f or byte == 0x0a):
            fail(f"{what}: byte 0x{byte:02x} at {i} reached the output:\n"
                 + data.decode(errors="backslashreplace"))
    for line in data.split(b"\n"):
        if line.startswith(b"INJECTED"):
            fail(f"{what}: a newline of the hostile text started a line:\n" + data.decode())
    checked.append(what)


def tool(what, args, **kwargs):
    """Runs gdrhook ARGS; its stdout and stderr are checked; returns both."""
    run = subprocess.run(EMULATOR + [TOOL] + args, capture_output=True, timeout=60, **kwargs)
    check_text(what + " (stdout)", run.stdout)
    check_text(what + " (stderr)", run.stderr)
    said = run.stdout + run.stderr
    # The hostile text was printed (escaped), not left out: the check
    # above would pass on a command that said nothing of it.
    if b"\\x1b[31m" not in said:
        fail(f"{what}: the hostile text was not shown at all:\n" + said.decode())
    return run


def line(**fields):
    base = {"ts_ns": 1000, "seq": 0, "pid": 4242, "tid": 4242, "addr": "0x0", "size": 0,
            "dev": 0, "rc": 0, "via": "symbol"}
    base.update(fields)
    return json.dumps(base)  # ensure_ascii: the log's own escapes, \\u001b and all


def hostile_log(folder, name):
    lines = [
        line(ev="process", api="gdrhook", seq=0, dev=-1, host=HOSTILE, ppid=1,
             cmdline=["python3", HOSTILE], version=HOSTILE, config={"GDRHOOK_PIN": HOSTILE},
             clock={"source": "realtime", "realtime_ns": 999, "monotonic_ns": 1}),
        line(ev="alloc", api=HOSTILE, seq=1, ts_ns=2000, addr="0x7f0000000000", size=4096,
             kind=HOSTILE),
        line(ev="pin", api=HOSTILE, seq=2, ts_ns=3000, addr="0x7f0000000000", size=4096,
             backend=HOSTILE, handle=1),
        line(ev="skip", api=HOSTILE, seq=3, ts_ns=3500, addr="0x7f0000100000", size=4096,
             kind="device", reason=HOSTILE),
        line(ev="error", api=HOSTILE, seq=4, ts_ns=4000, rc=2, msg=HOSTILE),
        line(ev="free", api=HOSTILE, seq=5, ts_ns=5000, addr="0x7f0000000000", size=4096,
             kind="device"),
    ]
    path = os.path.join(folder, name)
    with open(path, "wb") as f:
        f.write(("\n".join(lines) + "\n").encode())
        f.write(b"{not json\n")  # a malformed line: named by file and line
    return path


def fake_proc(root, job):
    """A /proc with one process of job JOB holding the CUDA driver's
    dma-buf, its name and the buffer's hostile, and a /sys with nothing."""
    proc, sys_ = os.path.join(root, "proc"), os.path.join(root, "sys")
    pid = os.path.join(proc, "500")
    os.makedirs(os.path.join(pid, "fdinfo"))
    os.makedirs(os.path.join(pid, "fd"))
    os.makedirs(sys_)
    comm = b"\x1b[31m\x7f\nINJECTED"  # PR_SET_NAME keeps 15 bytes, any but NUL
    with open(os.path.join(pid, "status"), "wb") as f:
        f.write(b"Name:\t" + comm + b"\nUid:\t0\t0\t0\t0\n")
    with open(os.path.join(pid, "comm"), "wb") as f:
        f.write(comm + b"\n")
    with open(os.path.join(pid, "cgroup"), "w") as f:
        f.write(f"0::/system.slice/slurmstepd.scope/job_{job}/step_0/user/task_0\n")
    with open(os.path.join(pid, "environ"), "w") as f:
        f.write("")
    os.symlink("anon_inode:dmabuf", os.path.join(pid, "fd", "10"))
    with open(os.path.join(pid, "fdinfo", "10"), "wb") as f:
        f.write(b"pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t4242\nsize:\t4096\ncount:\t1\n"
                b"exp_name:\tnvidia\nname:\t" + HOSTILE.encode().replace(b"\n", b" ") + b"\n")
    return proc, sys_


def killed_holding_pins(log):
    """The churn program under the shim pins, logs to LOG (a hostile name)
    and is killed: its journal waits beside LOG for recovery."""
    env = dict(os.environ, GDRHOOK_PIN="alloc", GDRHOOK_BACKEND="dmabuf",
               GDRHOOK_EVENTS=log, LD_PRELOAD=os.environ["GDRHOOKTEST_SHIM"],
               LD_LIBRARY_PATH=os.environ["GDRHOOKTEST_FAKE_DRIVER_DIR"])
    child = subprocess.Popen(EMULATOR + [os.environ["GDRHOOKTEST_CHURN"], "hold", "1", "0", "2"],
                             env=env, stdout=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(log) and b'"ev":"pin"' in open(log, "rb").read():
            break
        time.sleep(0.05)
    child.kill()
    child.wait()


def main():
    tmp = tempfile.mkdtemp(dir=os.environ.get("GDRHOOKTEST_TMP"))
    try:
        logs = os.path.join(tmp, "logs")
        os.makedirs(logs)
        name = os.fsdecode(HOSTILE_NAME + b".jsonl")
        log = hostile_log(logs, name)

        tool("log summary", ["log", "summary", logs])
        as_json = tool("log summary --json", ["log", "summary", "--json", log])
        # Still JSON, and it says what the log holds, byte for byte.
        if ("python3 " + HOSTILE) not in json.loads(as_json.stdout)["commands"]:
            fail("log summary --json lost the command line: " + as_json.stdout.decode())
        tool("log check", ["log", "check", logs])
        tool("log timeline", ["log", "timeline", logs, "-o", os.path.join(tmp, "t.svg")])
        # A file name that is no log: the reader's refusal names it.
        os.mkfifo(os.path.join(logs, os.fsdecode(HOSTILE_NAME + b".fifo.jsonl")))
        tool("log check (a FIFO)", ["log", "check", logs])
        tool("log summary (missing)", ["log", "summary", os.path.join(tmp, name + "-none")])

        killed = os.path.join(tmp, "killed", name)
        os.makedirs(os.path.dirname(killed))
        killed_holding_pins(killed)
        tool("log recover", ["log", "recover", os.path.dirname(killed)])

        proc, sys_ = fake_proc(os.path.join(tmp, "machine"), 9)
        tool("node", ["node", "--proc", proc, "--sys", sys_])
        tool("node --job", ["node", "--job", "9", "--proc", proc, "--sys", sys_])
        summary = os.path.join(tmp, "epilog-summary.txt")
        tool("epilog", ["epilog", "--job", "9", "--uid", "0", "--proc", proc, "--sys", sys_,
                        "--events", os.path.join(logs, "%p.jsonl"), "--summary", summary])
        check_text("epilog --summary (the file)", open(summary, "rb").read())
        # The epilog over logs whose names are hostile (%h is this host).
        tool("epilog (log names)", ["epilog", "--job", "9", "--proc", proc, "--sys", sys_,
                                    "--events", log])

        tool("run (program name)", ["run", "--no-summary", "--", "/nonexistent/" + HOSTILE])
        # gdrhook run's summary names the logs its program wrote.
        run_logs = os.path.join(tmp, "run")
        os.makedirs(run_logs)
        tool("run (log names)",
             ["run", "--events", os.path.join(run_logs, name + ".%p.jsonl"), "--"] + EMULATOR
             + [os.environ["GDRHOOKTEST_CHURN"], "gdrhook", "1", "2", "1"],
             env=dict(os.environ, LD_LIBRARY_PATH=os.environ["GDRHOOKTEST_FAKE_DRIVER_DIR"]))
        tool("doctor (device name)", ["doctor", "--libcuda", "/nonexistent/" + HOSTILE,
                                      "--libnvml", "/nonexistent/libnvidia-ml.so.1",
                                      "--device", "/nonexistent/" + HOSTILE])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("checked:", ", ".join(checked))


main()
