#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""UCX's own registration cache (tests/gpu/ucx_rcache_py.cpp, loaded with
ctypes) over a framework's buffers, for tests/gpu/ucx_table.sh: ROUNDS
rounds of allocate, look up (register), free, allocate again, look up; a
lookup is stale when the cache answers with a region of a buffer the
driver has since freed.

usage: ucx_frameworks.py LIB WORKLOAD ROUNDS HITS
  torch_expandable  PyTorch's caching allocator with expandable segments
                    (the caller sets PYTORCH_CUDA_ALLOC_CONF): 64 MiB
                    tensors, freed by torch.cuda.empty_cache(), which
                    unmaps and releases (cuMemUnmap, cuMemRelease)
  jax               JAX with the platform allocator (the caller sets
                    XLA_PYTHON_CLIENT_ALLOCATOR=platform): 64 MiB arrays,
                    freed by delete()
  driver            cuMemAlloc_v2/cuMemFree_v2 through ctypes: the
                    plumbing, over the fake driver where there is no GPU

Prints one line as tests/ucx/ucx_rcache.cpp prints a path's:
  path=WORKLOAD rounds= lookups= same_address= stale_hits= exports=
  export_failed= mem_held= lookup_ns=
Exits 0, 3 when UCX refused its cache, 77 when the framework is missing.
"""
import ctypes
import gc
import sys
import time

SIZE = 64 << 20


class Driver:
    def __init__(self):
        self.cuda = ctypes.CDLL("libcuda.so.1")
        self.cuda.cuInit(0)

    def alloc(self):
        p = ctypes.c_uint64(0)
        rc = self.cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(SIZE))
        if rc != 0:
            raise RuntimeError(f"cuMemAlloc_v2: {rc}")
        return p.value, [p.value]

    def free(self, holder):
        rc = self.cuda.cuMemFree_v2(ctypes.c_uint64(holder.pop()))
        if rc != 0:
            raise RuntimeError(f"cuMemFree_v2: {rc}")

    def sync(self):
        self.cuda.cuCtxSynchronize()


class TorchExpandable:
    def __init__(self):
        import torch
        self.torch = torch
        self.keep = torch.zeros(1, device="cuda")  # the context, the small pool
        torch.cuda.synchronize()

    def alloc(self):
        t = self.torch.empty(SIZE, dtype=self.torch.uint8, device="cuda")
        self.torch.cuda.synchronize()
        return t.data_ptr(), [t]

    def free(self, holder):
        holder.clear()
        gc.collect()
        self.torch.cuda.synchronize()
        self.torch.cuda.empty_cache()

    def sync(self):
        self.torch.cuda.synchronize()


class Jax:
    def __init__(self):
        import jax
        import jax.numpy as jnp
        self.jnp = jnp
        self.keep = jnp.zeros((1,), dtype=jnp.uint8).block_until_ready()

    def alloc(self):
        x = self.jnp.zeros((SIZE,), dtype=self.jnp.uint8).block_until_ready()
        try:
            addr = x.unsafe_buffer_pointer()
        except AttributeError:
            addr = x.addressable_data(0).unsafe_buffer_pointer()
        return addr, [x]

    def free(self, holder):
        holder.pop().delete()
        gc.collect()

    def sync(self):
        self.keep.block_until_ready()


def main():
    lib_path, workload, rounds, hits = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    # The cache's library first: libucm is in the process before the first
    # CUDA call, as in a UCX program.
    lib = ctypes.CDLL(lib_path)
    lib.ucxr_lookup.argtypes = [ctypes.c_ulonglong, ctypes.c_ulonglong]
    lib.ucxr_time_hits.argtypes = [ctypes.c_ulonglong, ctypes.c_ulonglong, ctypes.c_long]
    lib.ucxr_time_hits.restype = ctypes.c_double
    lib.ucxr_used.restype = ctypes.c_longlong
    try:
        fw = {"torch_expandable": TorchExpandable, "jax": Jax, "driver": Driver}[workload]()
    except ImportError as e:
        print(f"{workload}: skipped ({e})")
        return 77
    rc = lib.ucxr_open(1)
    if rc != 0:
        return rc
    sys.stdout.flush()

    used_before = lib.ucxr_used()
    lookups = stale = same = 0
    second = None
    for _ in range(rounds):
        if second is not None:
            fw.free(second[1])
        first_addr, first = fw.alloc()
        r = lib.ucxr_lookup(first_addr, SIZE)
        if r < 0:
            raise RuntimeError("ucs_rcache_get failed")
        lookups, stale = lookups + 1, stale + r
        fw.free(first)
        second = fw.alloc()
        same += second[0] == first_addr
        r = lib.ucxr_lookup(second[0], SIZE)
        if r < 0:
            raise RuntimeError("ucs_rcache_get failed")
        lookups, stale = lookups + 1, stale + r
    ns = lib.ucxr_time_hits(second[0], SIZE, hits)
    fw.free(second[1])
    lib.ucxr_drain()
    fw.sync()
    held = lib.ucxr_used() - used_before
    for _ in range(20):  # a dma-buf gdrhook's worker closes after the free
        if held <= 0:
            break
        time.sleep(0.05)
        held = lib.ucxr_used() - used_before
    print(f"path={workload} rounds={rounds} lookups={lookups} same_address={same} "
          f"stale_hits={stale} exports={lib.ucxr_exports()} "
          f"export_failed={lib.ucxr_export_failed()} mem_held={held} lookup_ns={ns:.1f}")
    sys.stdout.flush()
    lib.ucxr_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
