#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""check_format.py looks where it should: in a tree of one unformatted
file per top folder (and a test's .hpp, .cu and .c), every one is
reported; the kernel's C (kmod/, tests/kmods/), in kernel style, is not.

usage: test_check_format.py ROOT"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
UNFORMATTED = "int  f( int x ){return x;}\n"


def main(argv):
    root = argv[0]
    folders = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))
                     and not d.startswith((".", "build")) and d != "kmod")
    wanted = [f"{d}/bad.cpp" for d in folders] + ["tests/vm/guest/bad.hpp", "tests/gpu/bad.cu",
                                                  "tests/programs/bad.c", "bad.h"]
    kernel = ["kmod/bad.c", "tests/kmods/provider/bad.c"]
    with tempfile.TemporaryDirectory() as tree:
        shutil.copy(os.path.join(root, ".clang-format"), tree)
        for path in wanted + kernel:
            os.makedirs(os.path.join(tree, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(tree, path), "w") as f:
                f.write(UNFORMATTED)
        result = subprocess.run([sys.executable, os.path.join(HERE, "check_format.py"), tree],
                                capture_output=True, text=True)
    print(result.stdout, end="")
    missed = [p for p in wanted if f"check_format: {p} is not" not in result.stdout]
    judged = [p for p in kernel if p in result.stdout]
    for p in missed:
        print(f"test_check_format: {p} was not reported")
    for p in judged:
        print(f"test_check_format: {p}, kernel style, was judged by clang-format")
    ok = result.returncode == 1 and not missed and not judged
    print(f"test_check_format: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
