# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Brackets the part of a framework script whose deallocations are counted.

A marker is a cuMemAlloc of a size nobody else uses, freed at once, made
through ctypes (dlsym, so the shim sees it). count_events.py counts the free
events between the first marker's free and the second marker's alloc and
compares them with the number the script printed as frees_made=N.
"""
import ctypes

MARKER_SIZE = 3 * 1024 * 1024 + 7 * 4096

_cuda = ctypes.CDLL("libcuda.so.1")


def mark():
    ctx = ctypes.c_void_p()
    _cuda.cuCtxGetCurrent(ctypes.byref(ctx))
    if not ctx.value:
        _cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)
        _cuda.cuCtxSetCurrent(ctx)
    ptr = ctypes.c_uint64()
    rc = _cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(MARKER_SIZE))
    assert rc == 0, f"marker cuMemAlloc failed: {rc}"
    rc = _cuda.cuMemFree_v2(ptr)
    assert rc == 0, f"marker cuMemFree failed: {rc}"
