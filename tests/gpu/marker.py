# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Brackets the part of a framework script whose deallocations are counted.

A marker is a cuMemAlloc of a size nobody else uses, freed at once, made
through ctypes (dlsym, so the shim sees it). count_events.py counts the free
events between the first marker's free and the second marker's alloc and
compares them with the number the script printed as frees_made=N.

used_bytes() and report_mem_delta() measure device memory the same way for
every framework, for the mem_used_delta=N line each program prints.
"""
import ctypes
import sys
import time

MARKER_SIZE = 3 * 1024 * 1024 + 7 * 4096

_cuda = ctypes.CDLL("libcuda.so.1")


def mark():
    _current_context()
    ptr = ctypes.c_uint64()
    rc = _cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(MARKER_SIZE))
    assert rc == 0, f"marker cuMemAlloc failed: {rc}"
    rc = _cuda.cuMemFree_v2(ptr)
    assert rc == 0, f"marker cuMemFree failed: {rc}"


def _current_context():
    ctx = ctypes.c_void_p()
    _cuda.cuCtxGetCurrent(ctypes.byref(ctx))
    if not ctx.value:
        _cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)
        _cuda.cuCtxSetCurrent(ctx)


def used_bytes():
    """Device memory in use (cuMemGetInfo_v2: total - free), whichever
    framework allocated it."""
    _current_context()
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    rc = _cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
    assert rc == 0, f"cuMemGetInfo failed: {rc}"
    return total.value - free.value


def report_mem_delta(used_at_start):
    """Prints mem_used_delta=N on stderr for tests/gpu/run.sh: memory in use
    now minus at the start. A pin's dma-buf keeps memory until the shim's
    worker closes it, right after the free: allow it up to a second."""
    used = used_bytes()
    for _ in range(100):
        if used <= used_at_start:
            break
        time.sleep(0.01)
        used = used_bytes()
    print(f"mem_used_delta={used - used_at_start}", file=sys.stderr)
