#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# The mutation check (tests/mutants/run.py): every mutant of mutants.py,
# one at a time on a scratch copy of the tree; fails if any survives.
exec python3 "$(dirname "$0")/run.py" "$@"
