#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# run_tests.py BUILD SUITE... - runs the test programs of an aarch64 meson
# build's suites inside Debian's arm64 kernel in qemu-system-aarch64 (one
# boot for all), for what qemu-user cannot run: a TSan build, whose
# runtime needs the 48-bit address space layout of a real aarch64 kernel
# (docs/design.md, "What differs by architecture"). Prints a line per test
# and "arm64-vm-tests: N passed, M failed"; exit status 0 only when every
# test passed and there was at least one.
#
# The guest is a busybox initramfs (tests/vm/arm64/prepare.sh's kernel and
# busybox): every program and shared library of BUILD, at its own path,
# and the libraries they load, listed by the aarch64 dynamic loader under
# qemu-user as tests/vm/run.sh does for its pipeline test. The
# toolchain's runtime libraries (libtsan) are the cross compiler's
# (/usr/aarch64-linux-gnu/lib): no :arm64 package ships them.
# A test that is not an aarch64 program (a Python check of the tree) is
# the build machine's: named as not run here, and not counted.
import gzip
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CROSS_LIBS = "/usr/aarch64-linux-gnu/lib"
ARM64_LIBS = "/lib/aarch64-linux-gnu"
LOADER = "/lib/ld-linux-aarch64.so.1"
ELF_AARCH64 = 183


def is_aarch64_elf(path):
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return False
    return head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == ELF_AARCH64


def build_programs(build):
    """Every aarch64 program and shared library the build made (not its
    objects, which live in *.p folders)."""
    found = []
    for root, dirs, files in os.walk(build):
        dirs[:] = [d for d in dirs if not d.endswith(".p") and d != "meson-private"]
        found += [os.path.join(root, f) for f in files if is_aarch64_elf(os.path.join(root, f))]
    return found


def libraries(programs, library_path):
    """The libraries the programs load, as the aarch64 loader finds them."""
    found = set()
    for program in programs:
        listing = subprocess.run(["qemu-aarch64-static", LOADER, "--list", program],
                                 env=dict(os.environ, LD_LIBRARY_PATH=library_path),
                                 capture_output=True, text=True)
        for line in listing.stdout.splitlines():
            words = line.split()
            if "=>" in words and words[-1].startswith("(") and words[words.index("=>") + 1].startswith("/"):
                found.add(words[words.index("=>") + 1])
            elif words and words[0].startswith("/"):
                found.add(words[0])
            elif "not found" in line:
                sys.exit(f"arm64-vm-tests: {program}: {line.strip()}")
    return found


def guest_script(tests, library_path):
    lines = ["#!/bin/busybox sh", "/bin/busybox --install -s /bin",
             "mount -t proc proc /proc", "mount -t sysfs sys /sys", "mount -t devtmpfs dev /dev"]
    # No tmpfs on /tmp: the initramfs is already writable memory, and a
    # build under /tmp would be hidden by it.
    for test in tests:
        env = dict(test["env"], LD_LIBRARY_PATH=library_path, PATH="/bin", HOME="/tmp")
        command = " ".join(shlex.quote(word) for word in test["cmd"])
        assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
        name = shlex.quote(test["name"])
        lines += [f"mkdir -p {shlex.quote(test['workdir'] or '/')}",
                  f"cd {shlex.quote(test['workdir'] or '/')}",
                  f"echo arm64-vm-test-start: {name}",
                  f"env -i {assignments} {command} </dev/null 2>&1",
                  f"echo arm64-vm-test-end: {name} exit $?"]
    lines += ["sync", "poweroff -f"]
    return "\n".join(lines) + "\n"


def pack(root, out):
    listing = subprocess.run(["find", "."], cwd=root, capture_output=True, check=True).stdout
    archive = subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=root, input=listing,
                             capture_output=True, check=True).stdout
    with gzip.open(out, "wb", compresslevel=1) as f:
        f.write(archive)


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: run_tests.py BUILD SUITE...")
    build, suites = os.path.abspath(argv[1]), argv[2:]
    introspected = json.loads(subprocess.run(["meson", "introspect", build, "--tests"],
                                             capture_output=True, check=True, text=True).stdout)
    tests = []
    for t in introspected:
        if not any(s.split(":")[-1] in suites for s in t["suite"]):
            continue
        if not t["cmd"][0].startswith(build + "/"):
            print(f"{t['name']}: not run here ({t['cmd'][0]} is the build machine's)")
            continue
        if not is_aarch64_elf(t["cmd"][0]):
            sys.exit(f"arm64-vm-tests: {t['name']}: {t['cmd'][0]} is not built (ninja -C {build})")
        t["workdir"] = t.get("workdir") or build
        tests.append(t)
    if not tests:
        sys.exit(f"arm64-vm-tests: no test program in suites {' '.join(suites)} of {build}")
    kernel_release = subprocess.run([os.path.join(HERE, "prepare.sh")], capture_output=True,
                                    check=True, text=True).stdout.strip()
    cache = os.environ.get("GDRHOOKTEST_VM_KERNEL_CACHE",
                           os.path.expanduser("~/.cache/gdrhook/kernels"))
    kernel = os.path.join(cache, kernel_release)
    programs = build_programs(build)
    library_dirs = sorted({os.path.dirname(p) for p in programs if ".so" in os.path.basename(p)})
    # Debian's arm64 C library before the cross toolchain's: the loader is
    # libc6:arm64's, and its libc.so.6 must be the same release (the cross
    # toolchain's 2.36-8 under 2.36-9's loader hangs every pthread_create).
    # The cross directory is only for what no :arm64 package ships (libtsan).
    library_path = ":".join(library_dirs + [ARM64_LIBS, CROSS_LIBS])
    work = tempfile.mkdtemp(prefix="gdrhook-arm64-tests.")
    try:
        root = os.path.join(work, "root")
        for path in programs + sorted(libraries(programs, library_path)) + [LOADER]:
            target = root + path
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy(path, target)
        os.makedirs(os.path.join(root, "bin"), exist_ok=True)
        for d in ("proc", "sys", "tmp", "dev"):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        shutil.copy(os.path.join(kernel, "busybox"), os.path.join(root, "bin/busybox"))
        with open(os.path.join(root, "init"), "w") as f:
            f.write(guest_script(tests, library_path))
        os.chmod(os.path.join(root, "init"), 0o755)
        initramfs = os.path.join(work, "initramfs.cpio.gz")
        pack(root, initramfs)
        log = os.path.join(build, "arm64-vm-tests.log")
        timeout = os.environ.get("GDRHOOKTEST_VM_TIMEOUT", "3000")
        with open(log, "w") as f:
            # -cpu max with pointer authentication's implementation-defined
            # algorithm, as tests/vm/run.sh boots it (TCG's QARMA is slow).
            subprocess.run(["timeout", "--kill-after=10", timeout, "qemu-system-aarch64",
                            "-nographic", "-no-reboot", "-machine", "virt",
                            "-cpu", "max,pauth-impdef=on", "-accel", "tcg,thread=multi",
                            "-smp", os.environ.get("GDRHOOKTEST_VM_SMP", "2"),
                            "-m", os.environ.get("GDRHOOKTEST_VM_MEM", "2G"), "-nic", "none",
                            "-kernel", os.path.join(kernel, "bzImage"), "-initrd", initramfs,
                            "-append", "console=ttyAMA0 panic=-1 quiet"],
                           stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
    finally:
        if os.environ.get("GDRHOOKTEST_VM_KEEP") != "1":
            shutil.rmtree(work)
    return report(tests, log, kernel_release)


def report(tests, log, kernel_release):
    with open(log, errors="replace") as f:
        output = f.read().replace("\r", "")
    passed = failed = 0
    for t in tests:
        start = output.find(f"arm64-vm-test-start: {t['name']}\n")
        end_mark = f"arm64-vm-test-end: {t['name']} exit "
        end = output.find(end_mark, start)
        if start < 0 or end < 0:
            print(f"{t['name']}: FAIL (the guest never finished it; see {log})")
            failed += 1
            continue
        status = output[end + len(end_mark):].split("\n", 1)[0]
        body = output[start:end]
        # A TSan report fails the test whatever its status.
        if status == "0" and "ThreadSanitizer" not in body:
            print(f"{t['name']}: OK")
            passed += 1
        else:
            print(f"{t['name']}: FAIL (exit {status}); its output:")
            print(body[-4000:])
            failed += 1
    print(f"arm64-vm-tests: kernel {kernel_release}: {passed} passed, {failed} failed")
    return 0 if passed and not failed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
