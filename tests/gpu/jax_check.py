# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""JAX under the shim, with the platform allocator (one cuMemAlloc per
buffer): 50 arrays put on the device and deleted."""
import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import marker  # noqa: E402

jax.device_put(np.ones(16, np.float32)).block_until_ready()
used_at_start = marker.used_bytes()  # JAX has no query of its own: cuMemGetInfo
marker.mark()
arrays = [jax.device_put(np.full(100_000 + i, i, np.float32)) for i in range(50)]
checksum = 0.0
for a in arrays:
    a.block_until_ready()
    checksum += float(np.asarray(a)[-1])
for a in arrays:
    a.delete()
del arrays
total = jax.numpy.arange(1000.0).sum()  # a computation, with its temporaries
checksum += float(total)
jax.effects_barrier()
marker.mark()
marker.report_mem_delta(used_at_start)
print(f"checksum={checksum:.1f}")
print("expect_min frees=50", file=sys.stderr)
