# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""cuMemUnmap of ranges that are not whole mappings, through cuda-python's
driver bindings, beside mappings that pin-on-alloc pinned: the second
half of a mapping, its first half, a range from inside one mapping into
the next, and one that is two whole neighbouring mappings. What the
driver answers each, and cuMemGetAddressRange inside a mapping, are
printed (the same plain and hooked); after the refusals every mapping
must still hold what was written. Run plain and hooked by
tests/gpu/more_programs.sh."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from driver_calls import as_int, call, cu, ok, primary_context  # noqa: E402 - after its path


def main():
    dev, _ = primary_context()
    prop = cu.CUmemAllocationProp()
    prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = 0
    gran = ok(cu.cuMemGetAllocationGranularity, prop,
              cu.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM)
    access = cu.CUmemAccessDesc()
    access.location = prop.location
    access.flags = cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    # Three mappings side by side in one reservation: 2, 2 and 1 granules.
    sizes = [2 * gran, 2 * gran, gran]
    total = sum(sizes)
    va = as_int(ok(cu.cuMemAddressReserve, total, 0, 0, 0))
    starts, handles = [], []
    at = va
    for i, size in enumerate(sizes):
        handle = ok(cu.cuMemCreate, size, prop, 0)
        ok(cu.cuMemMap, at, size, 0, handle, 0)
        ok(cu.cuMemSetAccess, at, size, [access], 1)
        ok(cu.cuMemsetD8, at, 0x10 + i, size)
        starts.append(at)
        handles.append(handle)
        at += size
    ok(cu.cuCtxSynchronize)

    err, rng = call(cu.cuMemGetAddressRange, starts[0] + gran + 4096)
    if err == "CUDA_SUCCESS":
        print(f"range inside the first mapping: base {as_int(rng[0]) - va:+d} "
              f"size {as_int(rng[1])}")
    else:
        print(f"range inside the first mapping: {err}")
    tries = [("second half of a mapping", starts[0] + gran, gran),
             ("first half of a mapping", starts[1], gran),
             ("from inside one mapping into the next", starts[0] + gran, 2 * gran)]
    for label, addr, size in tries:
        err, _ = call(cu.cuMemUnmap, addr, size)
        print(f"unmap {label}: {err}")

    whole = True
    for i, (start, size) in enumerate(zip(starts, sizes)):
        host = bytearray(64)
        for offset in (0, size - 64):
            ok(cu.cuMemcpyDtoH, host, start + offset, 64)
            whole &= all(b == 0x10 + i for b in host)
    print(f"every mapping still holds what was written: {whole}")

    err, _ = call(cu.cuMemUnmap, starts[0], sizes[0] + sizes[1])
    print(f"unmap two whole neighbouring mappings at once: {err}")
    if err != "CUDA_SUCCESS":
        ok(cu.cuMemUnmap, starts[0], sizes[0])
        ok(cu.cuMemUnmap, starts[1], sizes[1])
    ok(cu.cuMemUnmap, starts[2], sizes[2])
    for handle in handles:
        ok(cu.cuMemRelease, handle)
    ok(cu.cuMemAddressFree, va, total)
    ok(cu.cuDevicePrimaryCtxRelease, dev)
    return 0 if whole else 1


sys.exit(main())
