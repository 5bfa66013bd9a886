# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""cuda-python's driver bindings on managed memory and on the calls that
must fail. Managed memory: cuMemAllocManaged (global and host attached),
cuMemAdvise, cuMemPrefetchAsync to the device and back to the host,
cuMemRangeGetAttribute, cuPointerGetAttributes with several attributes at
once, written by the device and read by the host. Errors: freeing twice,
freeing a host pointer, an interior pointer, null; cuMemFreeHost of device
memory; unregistering what is not registered; cuPointerGetAttribute(s)
and cuMemGetAddressRange of freed memory; a stale free that lands on the
allocation which reused its address. The shim sees each of these frees
and answers some pointer questions itself: every error name printed must
be the driver's. Run plain and hooked by tests/gpu/more_programs.sh."""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from driver_calls import as_int, call, cu, device_location, ok, primary_context  # noqa: E402

MIB = 1 << 20
A = cu.CUpointer_attribute
MANY = [A.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, A.CU_POINTER_ATTRIBUTE_IS_MANAGED,
        A.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, A.CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        A.CU_POINTER_ATTRIBUTE_MAPPED, A.CU_POINTER_ATTRIBUTE_BUFFER_ID,
        A.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR]
ONE_BY_ONE = [A.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, A.CU_POINTER_ATTRIBUTE_BUFFER_ID,
              A.CU_POINTER_ATTRIBUTE_RANGE_SIZE, A.CU_POINTER_ATTRIBUTE_CONTEXT,
              A.CU_POINTER_ATTRIBUTE_IS_MANAGED, A.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL]
R = cu.CUmem_range_attribute
CPU = -1  # CU_DEVICE_CPU


def rendered(attr, value, ptr):
    if attr == A.CU_POINTER_ATTRIBUTE_BUFFER_ID:
        return "id" if as_int(value) else "0"
    if attr == A.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        v = as_int(value)
        return "null" if not v else f"{v - ptr:+d}"
    if hasattr(value, "name"):
        return value.name
    v = as_int(value)
    return str(v) if v is not None else type(value).__name__


def many_at_once(label, ptr):
    name, values = call(cu.cuPointerGetAttributes, len(MANY), MANY, ptr)
    if name == "CUDA_SUCCESS":
        print(f"{label} all at once: " + " ".join(rendered(a, v, ptr) for a, v in zip(MANY, values)))
    else:
        print(f"{label} all at once: {name}")


def one_by_one(label, ptr, context=None):
    out = []
    for attr in ONE_BY_ONE:
        name, value = call(cu.cuPointerGetAttribute, attr, ptr)
        if name != "CUDA_SUCCESS":
            out.append(name)
        elif attr == A.CU_POINTER_ATTRIBUTE_CONTEXT:
            out.append("ours" if as_int(value) == context else "null" if not as_int(value) else "other")
        else:
            out.append(rendered(attr, value, ptr))
    print(f"{label}: " + " ".join(out))
    name, rng = call(cu.cuMemGetAddressRange, ptr)
    print(f"{label} range: " + (f"base {as_int(rng[0]) - ptr:+d} size {as_int(rng[1])}"
                                if name == "CUDA_SUCCESS" else name))


def prefetch(ptr, size, ordinal, stream):
    """cuMemPrefetchAsync to a device or the host (CU_DEVICE_CPU), under
    CUDA 13's signature (a location and flags) or 12's (a device)."""
    location = device_location(ordinal)
    if ordinal == CPU:
        location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_HOST
        location.id = 0
    for fn in (getattr(cu, "cuMemPrefetchAsync_v2", None), cu.cuMemPrefetchAsync):
        if fn is None:
            continue
        name, _ = call(fn, ptr, size, location, 0, stream)
        if name != "TypeError":
            return name
    return call(cu.cuMemPrefetchAsync, ptr, size, ordinal, stream)[0]


def advise(ptr, size, advice, ordinal):
    name, _ = call(cu.cuMemAdvise, ptr, size, advice, device_location(ordinal))
    if name == "TypeError":
        name, _ = call(cu.cuMemAdvise, ptr, size, advice, ordinal)
    return name


def range_attribute(attr, ptr, size):
    name, value = call(cu.cuMemRangeGetAttribute, 4, attr, ptr, size)
    if name != "CUDA_SUCCESS":
        return name
    # The bindings give the 4 bytes as an int or as a list of them.
    return str(as_int(value)) if as_int(value) is not None else str(list(value))


def managed(ctx, stream):
    size = 8 * MIB
    g = as_int(ok(cu.cuMemAllocManaged, size, cu.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL.value))
    h = as_int(ok(cu.cuMemAllocManaged, MIB, cu.CUmemAttach_flags.CU_MEM_ATTACH_HOST.value))
    many_at_once("managed global", g)
    many_at_once("managed global +1 MiB", g + MIB)
    many_at_once("managed host attached", h)
    one_by_one("managed global", g, ctx)
    print("advise read mostly:", advise(g, size, cu.CUmem_advise.CU_MEM_ADVISE_SET_READ_MOSTLY, 0))
    print("read mostly:", range_attribute(R.CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, g, size))
    print("unset read mostly:", advise(g, size, cu.CUmem_advise.CU_MEM_ADVISE_UNSET_READ_MOSTLY, 0))
    print("prefetch to device:", prefetch(g, size, 0, stream))
    ok(cu.cuStreamSynchronize, stream)
    print("last prefetch location:", range_attribute(R.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, g, size))
    print("memset d32:", call(cu.cuMemsetD32Async, g, 0x01020304, size // 4, stream)[0])
    print("prefetch to host:", prefetch(g, size, CPU, stream))
    ok(cu.cuStreamSynchronize, stream)
    print("last prefetch location:", range_attribute(R.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, g, size))
    words = (ctypes.c_uint32 * (size // 4)).from_address(g)
    print("host reads the device's words:", all(w == 0x01020304 for w in words[::4096]))
    many_at_once("managed after prefetches", g)
    del words
    print("free managed global:", call(cu.cuMemFree, g)[0], "again:", call(cu.cuMemFree, g)[0])
    print("free managed host attached:", call(cu.cuMemFree, h)[0])
    one_by_one("managed freed", g, ctx)
    many_at_once("managed freed", g)


def errors(ctx, stream):
    d = as_int(ok(cu.cuMemAlloc, 4 * MIB))
    one_by_one("device", d, ctx)
    print("free interior pointer:", call(cu.cuMemFree, d + 4096)[0])
    one_by_one("device after interior free", d, ctx)
    print("free null:", call(cu.cuMemFree, 0)[0])
    print("free host memory with cuMemFreeHost of device:", call(cu.cuMemFreeHost, d)[0])
    one_by_one("device after cuMemFreeHost", d, ctx)
    print("free:", call(cu.cuMemFree, d)[0], "again:", call(cu.cuMemFree, d)[0])
    one_by_one("device freed", d, ctx)
    many_at_once("device freed", d)
    print("free async of freed:", call(cu.cuMemFreeAsync, d, stream)[0],
          "sync:", call(cu.cuStreamSynchronize, stream)[0])

    plain_host = bytearray(1 << 16)
    address = ctypes.addressof((ctypes.c_char * len(plain_host)).from_buffer(plain_host))
    print("free a host pointer:", call(cu.cuMemFree, address)[0])
    print("cuMemFreeHost of a host pointer:", call(cu.cuMemFreeHost, address)[0])
    print("unregister unregistered:", call(cu.cuMemHostUnregister, address)[0])
    one_by_one("plain host", address, ctx)

    pinned = as_int(ok(cu.cuMemAllocHost, MIB))
    print("cuMemFree of pinned host:", call(cu.cuMemFree, pinned)[0])
    print("cuMemFreeHost:", call(cu.cuMemFreeHost, pinned)[0], "again:", call(cu.cuMemFreeHost, pinned)[0])
    one_by_one("pinned host freed", pinned, ctx)

    print("alloc 0 bytes:", call(cu.cuMemAlloc, 0)[0])
    print("alloc 1 PiB:", call(cu.cuMemAlloc, 1 << 50)[0])

    # A stale free: the address came back to a new allocation, and the old
    # owner frees it again. The driver cannot tell them apart.
    first = as_int(ok(cu.cuMemAlloc, 2 * MIB))
    one_by_one("first", first, ctx)
    ok(cu.cuMemFree, first)
    second = as_int(ok(cu.cuMemAlloc, 2 * MIB))
    print("address reused:", second == first)
    one_by_one("second", second, ctx)
    print("stale free of first:", call(cu.cuMemFree, first)[0])
    one_by_one("second after the stale free", second, ctx)
    print("free second:", call(cu.cuMemFree, second)[0])
    third = as_int(ok(cu.cuMemAlloc, 2 * MIB))
    ok(cu.cuMemsetD8, third, 9, 2 * MIB)
    out = bytearray(16)
    ok(cu.cuMemcpyDtoH, out, third, 16)
    print("third holds its bytes:", out == bytearray([9]) * 16)
    print("free third:", call(cu.cuMemFree, third)[0])


def main():
    dev, ctx = primary_context()
    stream = ok(cu.cuStreamCreate, 0)
    ctx = as_int(ctx)
    managed(ctx, stream)
    errors(ctx, stream)
    ok(cu.cuStreamDestroy, stream)
    ok(cu.cuDevicePrimaryCtxRelease, dev)
    print("managed and errors done")


main()
