#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""What each part of an unpinned cuMemAlloc+cuMemFree pair costs, found by
taking the part out.

GDRHOOK_PROFILE's timers read the cycle counter twice a part, and on the
GPU machine one read costs as much as some of the parts it times. This
builds, besides the shim as it is, one shim per part with that part taken
out of cache/record/recorder.cpp. Such a shim logs wrong events and is for
timing only. tests/gpu/compare_shims.sh then runs them side by side on a
GPU, with the same shim under GDRHOOK_DISABLE=1 and
tests/gpu/forwarding_shim.cpp, the least any interposer costs. A part costs
what taking it out saves, within the rounds' spread.

usage: pair_parts.py BUILD_DIR OUT_DIR
         builds OUT_DIR/whole.so and OUT_DIR/without_PART.so, one per part,
         with ninja in BUILD_DIR (a build of this tree); the source is put
         back, and the build rebuilt, whatever happens
       pair_parts.py --check [ROOT]
         fails unless each part's edits match ROOT's source (this tree by
         default) exactly once: the bench suite runs it, so a change to the
         recorder that leaves a part behind is found here, not on the GPU"""
import os
import shutil
import subprocess
import sys

SOURCE = "cache/record/recorder.cpp"

# part: (what is taken out, [(text, its replacement)])
PARTS = {
    "context": ("the allocation's cuCtxGetCurrent and its device", [
        ("allocation.context = current_context_of_thread();\n"
         "            allocation.dev = device_of(allocation.context);",
         "allocation.context = 0;\n            allocation.dev = 0;"),
    ]),
    "tracker": ("the allocation tracker's insert and take", [
        ("            hot_line.tracker->insert(allocation);\n        }\n        {",
         "        }\n        {"),
        ("ticket.tracked = hot_line.tracker->take(kind, addr, ticket.allocation);",
         "ticket.tracked = true;"),
    ]),
    "push": ("the event's packing and its push on the queue", [
        ("GDRHOOK_HOT void submit(const RecordedEvent &event)\n{\n",
         "GDRHOOK_HOT void submit(const RecordedEvent &event)\n{\n"
         "    if (event.addr != 1)\n        return;\n"),
    ]),
    "clock": ("the event's read of the cycle counter", [
        ("    event.time = queued_time_now();\n", "    event.time = 0;\n"),
    ]),
    "recorder": ("all of the recorder: what is left is the wrappers", [
        ("    if (GDRHOOK_UNLIKELY(profiling()))\n        return begin_free_profiled",
         "    if (addr != 1)\n        return FreeTicket{};\n"
         "    if (GDRHOOK_UNLIKELY(profiling()))\n        return begin_free_profiled"),
        ("    if (GDRHOOK_UNLIKELY(profiling()))\n        return record_alloc_profiled",
         "    if (addr != 1)\n        return;\n"
         "    if (GDRHOOK_UNLIKELY(profiling()))\n        return record_alloc_profiled"),
    ]),
}


def edited(text, part):
    """The source with `part` taken out; raises ValueError naming the edit
    that does not match exactly once."""
    for find, replace in PARTS[part][1]:
        found = text.count(find)
        if found != 1:
            raise ValueError(f"part {part}: {found} matches in {SOURCE} of {find!r}")
        text = text.replace(find, replace)
    return text


def check(root):
    with open(os.path.join(root, SOURCE)) as f:
        text = f.read()
    failed = False
    for part in PARTS:
        try:
            edited(text, part)
        except ValueError as e:
            print(f"pair_parts: {e}", file=sys.stderr)
            failed = True
    if not failed:
        print(f"pair_parts: {len(PARTS)} parts match {SOURCE}")
    return 1 if failed else 0


def build(build_dir, out_dir):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, SOURCE)
    with open(path) as f:
        original = f.read()
    os.makedirs(out_dir, exist_ok=True)
    shim = os.path.join(build_dir, "hook", "libgdrhook.so")

    def build_as(name, text, what):
        with open(path, "w") as f:
            f.write(text)
        subprocess.run(["ninja", "-C", build_dir, "hook/libgdrhook.so"], check=True,
                       stdout=subprocess.DEVNULL)
        shutil.copy(shim, os.path.join(out_dir, name))
        print(f"{name}: {what}")

    try:
        build_as("whole.so", original, "as it is")
        for part, (what, _) in PARTS.items():
            build_as(f"without_{part}.so", edited(original, part), what)
    finally:
        with open(path, "w") as f:
            f.write(original)
        subprocess.run(["ninja", "-C", build_dir, "hook/libgdrhook.so"],
                       stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--check":
        default = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        sys.exit(check(sys.argv[2] if len(sys.argv) > 2 else default))
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    build(sys.argv[1], sys.argv[2])
