#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# The mutation check (tests/mutants/run.py): every mutant of mutants.py,
# one at a time on a scratch copy of the tree (two workers side by side,
# each taking the next suite when free, on a machine of two or more
# processors); fails if any survives.
exec python3 "$(dirname "$0")/run.py" "$@"
