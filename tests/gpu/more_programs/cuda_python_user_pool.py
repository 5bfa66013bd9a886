# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""A memory pool of the program's own (cuMemPoolCreate) through cuda-python's
driver bindings: buffers allocated from it on a stream
(cuMemAllocFromPoolAsync), filled and read back, some freed on the stream
and the pool trimmed to nothing (cuMemPoolTrimTo), the same addresses asked
for again, and the pool destroyed while one buffer is still allocated from
it: the driver keeps that buffer until its own free. Each freed address is
asked cuPointerGetAttribute after its free. Prints values, error names and
pool figures, no addresses. Run plain and hooked by
tests/gpu/more_programs.sh."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from driver_calls import call, cu, ok, primary_context  # noqa: E402 - after its path

MIB = 1 << 20


def kind(ptr):
    """The memory type the driver gives, or its error's name."""
    name, value = call(cu.cuPointerGetAttribute,
                       cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr)
    return str(int(value)) if name == "CUDA_SUCCESS" else name


def pool_figure(pool, attr):
    return int(ok(cu.cuMemPoolGetAttribute, pool, attr)) // MIB


def read_word(ptr, stream, offset=0):
    host = bytearray(4)
    ok(cu.cuStreamSynchronize, stream)
    ok(cu.cuMemcpyDtoH, host, int(ptr) + offset, 4)
    return int.from_bytes(host, "little")


def main():
    dev, _ = primary_context()
    props = cu.CUmemPoolProps()
    props.allocType = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    props.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    props.location.id = 0
    pool = ok(cu.cuMemPoolCreate, props)
    attrs = cu.CUmemPool_attribute
    stream = ok(cu.cuStreamCreate, cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value)

    sizes = [2 * MIB, 8 * MIB, 64 * MIB, 3 * MIB + 4096]
    buffers = []
    for i, size in enumerate(sizes):
        p = ok(cu.cuMemAllocFromPoolAsync, size, pool, stream)
        ok(cu.cuMemsetD32Async, p, 1000 + i, size // 4, stream)
        buffers.append(p)
    print("filled:", [read_word(p, stream, size - 4) for p, size in zip(buffers, sizes)])
    print("kinds while live:", [kind(p) for p in buffers])
    print("reserved MiB at least the sum:",
          pool_figure(pool, attrs.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= sum(sizes) // MIB)

    # Freed on the stream, the pool keeps their memory until trimmed.
    for p in buffers[:3]:
        ok(cu.cuMemFreeAsync, p, stream)
    ok(cu.cuStreamSynchronize, stream)
    print("kinds after free:", [kind(p) for p in buffers[:3]])
    ok(cu.cuMemPoolTrimTo, pool, 0)
    print("used MiB after trim:", pool_figure(pool, attrs.CU_MEMPOOL_ATTR_USED_MEM_CURRENT))

    # The same sizes again: the pool may hand back the same addresses.
    again = []
    for i, size in enumerate(sizes[:3]):
        p = ok(cu.cuMemAllocFromPoolAsync, size, pool, stream)
        ok(cu.cuMemsetD32Async, p, 2000 + i, size // 4, stream)
        again.append(p)
    print("filled again:", [read_word(p, stream) for p in again])
    for p in again:
        ok(cu.cuMemFreeAsync, p, stream)
    ok(cu.cuStreamSynchronize, stream)

    # Destroyed with one buffer still allocated from it: the driver frees
    # the pool once that buffer is freed.
    last = buffers[3]
    ok(cu.cuMemPoolDestroy, pool)
    print("last buffer after the pool's destroy:", kind(last), read_word(last, stream))
    ok(cu.cuMemFreeAsync, last, stream)
    ok(cu.cuStreamSynchronize, stream)
    print("last buffer after its free:", kind(last))
    ok(cu.cuStreamDestroy, stream)
    ok(cu.cuDevicePrimaryCtxRelease, dev)
    print("user pool done")


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        # A driver error, by name: the same plain and hooked.
        print("stopped:", e)
