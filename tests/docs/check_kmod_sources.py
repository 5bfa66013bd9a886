#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""kmod/meson.build lists, as the module target's inputs, every source file
Kbuild reads (kmod/*.c, kmod/*.h, the uapi header, the probes): a file left
out is a change that rebuilds nothing, so the tests boot a stale module.
Fails naming each tracked file the list lacks.

usage: check_kmod_sources.py ROOT"""
import os
import re
import sys


def tracked_sources(root):
    kmod = os.path.join(root, "kmod")
    names = [os.path.relpath(os.path.join(folder, name), root)
             for sub in ("", "include/uapi", "probes")
             for folder in [os.path.join(kmod, sub)] if os.path.isdir(folder)
             for name in os.listdir(folder)]
    wanted = re.compile(r"^kmod/([^/]+\.[ch]|include/uapi/[^/]+\.h|probes/[^/]+\.sh|Kbuild|Makefile)$")
    generated = {"kmod/gdrhook_config.h", "kmod/gdrhook_version.h"}  # a `make` in kmod/ leaves them
    return sorted(name[len("kmod/"):] for name in names if wanted.match(name) and name not in generated)


def listed(root):
    text = open(os.path.join(root, "kmod", "meson.build")).read()
    block = text.split("kmod_sources = files(", 1)[1].split(")", 1)[0]
    return set(re.findall(r"'([^']+)'", block))


def main():
    root = sys.argv[1]
    missing = [name for name in tracked_sources(root) if name not in listed(root)]
    for name in missing:
        print(f"kmod/meson.build: kmod_sources lacks '{name}': a change to it would not rebuild gdrhook.ko")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
