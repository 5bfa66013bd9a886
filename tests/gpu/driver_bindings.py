# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""cuda-python's driver module under either of its names (cuda.bindings.driver,
or cuda.cuda in older releases), for the programs of more_programs/: without
it a program prints why and exits 0, plain and hooked alike."""
import sys

try:
    from cuda.bindings import driver
except ImportError:
    try:
        from cuda import cuda as driver
    except ImportError:
        print("skip: no cuda-python driver bindings")
        sys.exit(0)
