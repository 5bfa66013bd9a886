# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""cuda-python's driver bindings asking pointer questions of every kind of
memory: cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged, cuMemHostAlloc,
cuMemAllocHost, cuMemHostRegister over an mmap, cuMemAllocAsync on the
default pool and cuMemAllocFromPoolAsync on a pool of its own. Each is
asked cuPointerGetAttribute for many attributes (at its start and inside
it), cuPointerGetAttributes for all at once and cuMemGetAddressRange;
then again after it is freed, and after an address is reused. The shim
answers some of these from its own table: every answer must be the
driver's. Addresses are printed as offsets, ids only as "changed or
not". Run plain and hooked by tests/gpu/more_programs.sh."""
import ctypes
import mmap
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from driver_calls import as_int, call, cu, ok, primary_context  # noqa: E402 - after its path

MIB = 1 << 20
ADDRESS_ATTRS = ("DEVICE_POINTER", "HOST_POINTER", "RANGE_START_ADDR")
ATTR_NAMES = ("CONTEXT", "MEMORY_TYPE", "DEVICE_POINTER", "HOST_POINTER", "SYNC_MEMOPS",
              "BUFFER_ID", "IS_MANAGED", "DEVICE_ORDINAL", "IS_LEGACY_CUDA_IPC_CAPABLE",
              "RANGE_START_ADDR", "RANGE_SIZE", "MAPPED", "ALLOWED_HANDLE_TYPES",
              "IS_GPU_DIRECT_RDMA_CAPABLE", "ACCESS_FLAGS", "MEMPOOL_HANDLE")
ATTRS = [(n, getattr(cu.CUpointer_attribute, "CU_POINTER_ATTRIBUTE_" + n)) for n in ATTR_NAMES
         if hasattr(cu.CUpointer_attribute, "CU_POINTER_ATTRIBUTE_" + n)]
# Host allocation flags, by value: PORTABLE | DEVICEMAP.
HOST_FLAGS = 0x1 | 0x2


def render(name, value, ptr, known):
    if value is None:
        return "-"
    if name in ADDRESS_ATTRS:
        v = as_int(value)
        return "null" if not v else f"{v - ptr:+d}"
    if name in ("CONTEXT", "MEMPOOL_HANDLE"):
        v = as_int(value)
        return "null" if not v else next((k for k, h in known.items() if h == v), "other")
    if name == "BUFFER_ID":
        return "id" if as_int(value) else "0"
    if hasattr(value, "name"):
        return value.name
    v = as_int(value)
    return str(v) if v is not None else type(value).__name__


def ask(label, ptr, known, ids):
    answers = []
    for name, attr in ATTRS:
        err, value = call(cu.cuPointerGetAttribute, attr, ptr)
        answers.append(f"{name}={render(name, value, ptr, known) if err == 'CUDA_SUCCESS' else err}")
        if name == "BUFFER_ID" and err == "CUDA_SUCCESS":
            ids.setdefault(label.split()[0].split("+")[0], []).append(as_int(value))
    print(f"{label}: " + " ".join(answers))
    err, values = call(cu.cuPointerGetAttributes, len(ATTRS), [a for _, a in ATTRS], ptr)
    if err == "CUDA_SUCCESS" and isinstance(values, list):
        rendered = [render(n, v, ptr, known) for (n, _), v in zip(ATTRS, values)]
        print(f"{label} all at once: " + " ".join(rendered))
    else:
        print(f"{label} all at once: {err}")
    err, rng = call(cu.cuMemGetAddressRange, ptr)
    if err == "CUDA_SUCCESS":
        print(f"{label} range: base {as_int(rng[0]) - ptr:+d} size {as_int(rng[1])}")
    else:
        print(f"{label} range: {err}")


def ask_both(label, ptr, known, ids):
    ask(label, ptr, known, ids)
    ask(label + "+4096", ptr + 4096, known, ids)


def main():
    dev, ctx = primary_context()
    stream = ok(cu.cuStreamCreate, 0)
    props = cu.CUmemPoolProps()
    props.allocType = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    props.handleTypes = cu.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_NONE
    props.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    props.location.id = 0
    pool = ok(cu.cuMemPoolCreate, props)
    known = {"ctx": as_int(ctx), "pool": as_int(pool),
             "default_pool": as_int(ok(cu.cuDeviceGetDefaultMemPool, dev))}
    ids = {}

    device = as_int(ok(cu.cuMemAlloc, 2 * MIB))
    pitched, pitch = ok(cu.cuMemAllocPitch, 1000, 64, 4)
    pitched = as_int(pitched)
    print(f"pitch {as_int(pitch)}")
    managed = as_int(ok(cu.cuMemAllocManaged, MIB, cu.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL.value))
    host_alloc = as_int(ok(cu.cuMemHostAlloc, MIB, HOST_FLAGS))
    alloc_host = as_int(ok(cu.cuMemAllocHost, MIB))
    mapping = mmap.mmap(-1, MIB)
    anchor = ctypes.c_char.from_buffer(mapping)
    registered = ctypes.addressof(anchor)
    ok(cu.cuMemHostRegister, registered, MIB, HOST_FLAGS)
    stream_ordered = as_int(ok(cu.cuMemAllocAsync, MIB, stream))
    pooled = as_int(ok(cu.cuMemAllocFromPoolAsync, MIB, pool, stream))
    ok(cu.cuStreamSynchronize, stream)
    plain_host = bytearray(8192)
    unregistered = ctypes.addressof((ctypes.c_char * 8192).from_buffer(plain_host))

    live = [("device", device), ("pitched", pitched), ("managed", managed),
            ("host_alloc", host_alloc), ("alloc_host", alloc_host),
            ("registered", registered), ("stream_ordered", stream_ordered),
            ("pooled", pooled)]
    for label, ptr in live:
        ask_both(label, ptr, known, ids)
    ask("unregistered", unregistered, known, ids)

    sync = cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_SYNC_MEMOPS
    # The bindings pass the value by address, as the C call takes it.
    one = ctypes.c_uint(1)
    print("set sync_memops:", call(cu.cuPointerSetAttribute, ctypes.addressof(one), sync, device)[0])
    ask("device after set", device, known, ids)

    print("free device:", call(cu.cuMemFree, device)[0])
    ask_both("device freed", device, known, ids)
    again = as_int(ok(cu.cuMemAlloc, MIB))
    ask_both("device again", again, known, ids)
    print("free pitched:", call(cu.cuMemFree, pitched)[0])
    ask("pitched freed", pitched, known, ids)
    print("free managed:", call(cu.cuMemFree, managed)[0])
    ask("managed freed", managed, known, ids)
    print("free host_alloc:", call(cu.cuMemFreeHost, host_alloc)[0])
    ask("host_alloc freed", host_alloc, known, ids)
    print("free alloc_host:", call(cu.cuMemFreeHost, alloc_host)[0])
    ask("alloc_host freed", alloc_host, known, ids)
    print("unregister:", call(cu.cuMemHostUnregister, registered)[0])
    ask("registered unregistered", registered, known, ids)
    print("register again:", call(cu.cuMemHostRegister, registered, MIB, HOST_FLAGS)[0])
    ask("registered again", registered, known, ids)
    print("unregister again:", call(cu.cuMemHostUnregister, registered)[0])
    print("free async:", call(cu.cuMemFreeAsync, stream_ordered, stream)[0],
          call(cu.cuMemFreeAsync, pooled, stream)[0])
    ok(cu.cuStreamSynchronize, stream)
    print("trim:", call(cu.cuMemPoolTrimTo, pool, 0)[0])
    ask("pooled freed and trimmed", pooled, known, ids)
    pooled_again = as_int(ok(cu.cuMemAllocFromPoolAsync, 3 * MIB, pool, stream))
    ok(cu.cuStreamSynchronize, stream)
    ask("pooled again", pooled_again, known, ids)
    print("free pooled again:", call(cu.cuMemFreeAsync, pooled_again, stream)[0])
    ok(cu.cuStreamSynchronize, stream)
    print("destroy pool:", call(cu.cuMemPoolDestroy, pool)[0])
    ask("pooled after destroy", pooled_again, known, ids)
    print("free device again:", call(cu.cuMemFree, again)[0])

    for label, seen in sorted(ids.items()):
        distinct = len(set(seen))
        print(f"buffer ids {label}: {len(seen)} answers, {distinct} distinct")
    ok(cu.cuStreamDestroy, stream)
    ok(cu.cuDevicePrimaryCtxRelease, dev)
    del anchor
    mapping.close()
    print("pointer questions done")


main()
