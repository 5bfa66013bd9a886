# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The mutation check's own tests print one line per check, "ok: WHAT" or
"FAILED: WHAT", then "N failed", and exit 1 if any failed."""
import sys

failures = []


def check(what, ok):
    print(("ok: " if ok else "FAILED: ") + what)
    if not ok:
        failures.append(what)


def finish():
    print(f"{len(failures)} failed")
    sys.exit(1 if failures else 0)
