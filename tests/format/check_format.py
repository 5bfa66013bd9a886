#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The C and C++ tree is as clang-format 14 writes it (the repository's
.clang-format): every .c, .h, .cpp, .hpp and .cu file, the tests' own
included, but the kernel's C (kmod/ and the test modules, tests/kmods/),
which follows the kernel's style and its checkers (tests/vm/
check_kernel_style.sh).

usage: check_format.py ROOT

Prints each file clang-format would change, with the command that fixes
it; exits 1 if there is any, or if clang-format 14 is not installed (other
versions format differently)."""
import os
import re
import shutil
import subprocess
import sys

SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".cu")
KERNEL_STYLE = ("kmod", os.path.join("tests", "kmods"))


def sources(root):
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        # Hidden folders, build folders (meson's, dh's obj-*) and the
        # kernel's C are not ours to format here.
        dirs[:] = sorted(d for d in dirs
                         if not d.startswith((".", "build", "obj-"))
                         and os.path.normpath(os.path.join(rel, d)) not in KERNEL_STYLE)
        for name in sorted(files):
            if name.endswith(SUFFIXES):
                yield os.path.normpath(os.path.join(rel, name))


def clang_format():
    for name in ("clang-format-14", "clang-format"):
        path = shutil.which(name)
        if path:
            version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
            if re.search(r"version 14\.", version):
                return path
    return None


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[0]
    tool = clang_format()
    if not tool:
        print("check_format: clang-format 14 not found (apt-get install clang-format)")
        return 1
    files = list(sources(root))
    changed = []
    for at in range(0, len(files), 100):
        batch = files[at:at + 100]
        result = subprocess.run([tool, "--dry-run", "--style=file", *batch], cwd=root,
                                capture_output=True, text=True)
        if result.returncode != 0:
            print(result.stderr)
            return 1
        # --dry-run names each file it would change in a warning line.
        changed += sorted({line.split(":")[0] for line in result.stderr.splitlines()
                           if "warning:" in line})
    for name in changed:
        print(f"check_format: {name} is not clang-formatted: {os.path.basename(tool)} -i {name}")
    print(f"check_format: {len(files)} files, {len(changed)} to reformat")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
