# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""CuPy with the allocator its argument names: `async` (MemoryAsyncPool:
cuMemAllocAsync/cuMemFreeAsync), `managed` (a pool of managed memory),
`none` (no pool: a cudaMalloc and a cudaFree per array). 200 arrays of
varying sizes; the sum it prints is the same with and without the shim."""
import sys

import cupy as cp

mode = sys.argv[1]
if mode == "async":
    cp.cuda.set_allocator(cp.cuda.MemoryAsyncPool().malloc)
elif mode == "managed":
    cp.cuda.set_allocator(cp.cuda.MemoryPool(cp.cuda.malloc_managed).malloc)
elif mode == "none":
    cp.cuda.set_allocator(None)
else:
    sys.exit(f"cupy_allocators.py: async, managed or none, not {mode}")
rng = cp.random.default_rng(0)
total = 0.0
for i in range(200):
    a = rng.standard_normal((1 + i % 13) << 18, dtype=cp.float32)
    b = cp.sqrt(cp.abs(a)) * 2
    total += float(b.sum())
    del a, b
cp.cuda.Device().synchronize()
print(f"allocator={mode} total={total:.3f}")
