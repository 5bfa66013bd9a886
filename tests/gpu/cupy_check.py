# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""CuPy under the shim. With the memory pool switched off every array is one
cudaMalloc and one cudaFree, so the script knows how many it freed; then the
default pool is used and emptied with free_all_blocks() (counted by the
pool's own statistics)."""
import os
import sys

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import marker  # noqa: E402

cp.zeros(1)
cp.cuda.Device().synchronize()
used_at_start = marker.used_bytes()
marker.mark()

frees = 0
freed_bytes = 0
checksum = 0.0
cp.cuda.set_allocator(None)  # one cudaMalloc/cudaFree per array
for i in range(50):
    a = cp.full(100_000 + 1000 * i, i, dtype=cp.float32)
    checksum += float(a.get()[-1])
    freed_bytes += a.nbytes
    del a
    frees += 1

pool = cp.cuda.MemoryPool()
cp.cuda.set_allocator(pool.malloc)
arrays = [cp.full(1 << 20, i, dtype=cp.float32) for i in range(8)]
checksum += float(sum(a.get()[0] for a in arrays))
del arrays
held = pool.total_bytes()
pool.free_all_blocks()
cp.cuda.Device().synchronize()
marker.mark()
marker.report_mem_delta(used_at_start)

print(f"checksum={checksum:.1f}")
# Every byte the script and the pool gave back shows up as a free event.
print(f"expect freed_bytes={freed_bytes + held}", file=sys.stderr)
print(f"expect_min frees={frees + 1}", file=sys.stderr)
