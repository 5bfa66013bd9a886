# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Frees the driver refuses, through cuda-python's driver bindings (which
resolve the driver with cuGetProcAddress), between live allocations:
cuMemFree and cuMemFreeAsync of an address inside an allocation and of
its last byte, cuMemFreeHost of an address inside a cuMemAllocHost
block, cuMemHostUnregister inside a registered range. After each, the
allocations must still be whole: a copy through them gives back what was
written. Prints each refusal's error name, the same plain and hooked. Run
plain and hooked by tests/gpu/more_programs.sh."""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from driver_calls import as_int, call, cu, ok, primary_context  # noqa: E402 - after its path

MIB = 1 << 20


def refused(label, fn, *args):
    name, _ = call(fn, *args)
    print(f"{label}: {name}")
    return name != "CUDA_SUCCESS"


def round_trip(dptr, size, fill):
    host = (ctypes.c_ubyte * size)(*([fill] * size))
    back = (ctypes.c_ubyte * size)()
    ok(cu.cuMemcpyHtoD, dptr, ctypes.addressof(host), size)
    ok(cu.cuMemcpyDtoH, ctypes.addressof(back), dptr, size)
    return bytes(back) == bytes(host)


def main():
    dev, _ = primary_context()
    stream = ok(cu.cuStreamCreate, 0)
    first = as_int(ok(cu.cuMemAlloc, 4 * MIB))
    second = as_int(ok(cu.cuMemAlloc, 4 * MIB))
    host = as_int(ok(cu.cuMemAllocHost, 2 * MIB))
    own = ctypes.create_string_buffer(2 * MIB + 4096)
    own_at = (ctypes.addressof(own) + 4095) & ~4095
    ok(cu.cuMemHostRegister, own_at, 2 * MIB, 0)

    all_refused = all([
        refused("cuMemFree inside", cu.cuMemFree, first + MIB),
        refused("cuMemFree last byte", cu.cuMemFree, second + 4 * MIB - 1),
        refused("cuMemFreeAsync inside", cu.cuMemFreeAsync, first + 64 * 1024, stream),
        refused("cuMemFreeHost inside", cu.cuMemFreeHost, host + 4096),
        refused("cuMemHostUnregister inside", cu.cuMemHostUnregister, own_at + 4096),
    ])
    ok(cu.cuStreamSynchronize, stream)
    whole = round_trip(first, MIB, 7) and round_trip(second + 3 * MIB, MIB, 9)
    print(f"every free refused: {all_refused}; allocations whole: {whole}")

    ok(cu.cuMemHostUnregister, own_at)
    ok(cu.cuMemFreeHost, host)
    ok(cu.cuMemFree, second)
    ok(cu.cuMemFree, first)
    ok(cu.cuStreamDestroy, stream)
    ok(cu.cuDevicePrimaryCtxRelease, dev)
    return 0 if all_refused and whole else 1


sys.exit(main())
