# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""CuPy with its MemoryAsyncPool (cudaMallocAsync on the current stream)
as the allocator, arrays made and freed on two streams, the pool's blocks
freed; then files (on tmpfs and on disk) mapped with mmap(MAP_SHARED)
and registered with cudaHostRegister: copied to the device, computed on, copied back into the
mapping and read from the file after it is unregistered. The calls that
must fail (registering twice, unregistering what is not registered) print
the driver's error, and cudaPointerGetAttributes tells the memory type at
each step. Run plain and hooked by tests/gpu/more_programs.sh."""
import mmap
import os
import sys
import tempfile

try:
    import cupy as cp
    import numpy as np
except ImportError:
    print("skip: no cupy")
    sys.exit(0)

rt = cp.cuda.runtime
HOST_TO_DEVICE, DEVICE_TO_HOST = 1, 2
# cudaHostRegisterPortable | cudaHostRegisterMapped.
PORTABLE_MAPPED = 0x1 | 0x2
SIZE = 8 << 20


def attempt(label, fn, *args):
    try:
        fn(*args)
        print(f"{label}: ok")
    except rt.CUDARuntimeError as e:
        print(f"{label}: {e}")


def memory_type(label, ptr):
    try:
        print(f"{label}: type {rt.pointerGetAttributes(ptr).type}")
    except rt.CUDARuntimeError as e:
        print(f"{label}: {e}")


def async_pool():
    pool = cp.cuda.MemoryAsyncPool()
    previous = cp.cuda.get_allocator()
    cp.cuda.set_allocator(pool.malloc)
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
    sums = []
    for i in range(20):
        with streams[i % 2]:
            a = cp.arange((1 + i % 4) << (14 + i % 6), dtype=cp.int64)
            b = (a * (i + 1)) % 997
            sums.append(int(b.sum()))
            if i in (0, 19):
                memory_type(f"async pool array {i}", b.data.ptr)
            del a, b
    for s in streams:
        s.synchronize()
    pool.free_all_blocks()
    cp.cuda.set_allocator(previous)
    print("async pool sums", sums)


def registered_file(kind, directory):
    """A file in `directory` mapped and registered. The kernel may refuse
    to pin a disk file's pages for long (cudaErrorInvalidValue), plain and
    hooked alike; a tmpfs file's it pins."""
    print(f"{kind} file:")
    with tempfile.NamedTemporaryFile(dir=directory) as f:
        f.write(np.arange(SIZE // 4, dtype=np.int32).tobytes())
        f.flush()
        mapping = mmap.mmap(f.fileno(), SIZE, mmap.MAP_SHARED)
        host = np.frombuffer(mapping, dtype=np.int32)
        ptr = host.ctypes.data
        memory_type("mapped file before", ptr)
        attempt("register", rt.hostRegister, ptr, SIZE, PORTABLE_MAPPED)
        attempt("register again", rt.hostRegister, ptr, SIZE, PORTABLE_MAPPED)
        memory_type("mapped file registered", ptr)
        memory_type("mapped file registered +4096", ptr + 4096)
        dev = cp.empty(SIZE // 4, dtype=cp.int32)
        rt.memcpy(dev.data.ptr, ptr, SIZE, HOST_TO_DEVICE)
        dev *= 3
        rt.memcpy(ptr, dev.data.ptr, SIZE, DEVICE_TO_HOST)
        del dev
        attempt("unregister", rt.hostUnregister, ptr)
        attempt("unregister again", rt.hostUnregister, ptr)
        memory_type("mapped file unregistered", ptr)
        attempt("register a middle part", rt.hostRegister, ptr + 2 * 4096, 16 * 4096, PORTABLE_MAPPED)
        attempt("unregister the middle part", rt.hostUnregister, ptr + 2 * 4096)
        del host
        mapping.flush()
        mapping.close()
        f.seek(0)
        written = np.frombuffer(f.read(), dtype=np.int32)
        expected = np.arange(SIZE // 4, dtype=np.int64) * 3
        print("file holds the device's result", bool((written.astype(np.int64) == expected).all()))


async_pool()
registered_file("tmpfs", "/dev/shm")
registered_file("disk", os.environ.get("TMPDIR", "/tmp"))
cp.get_default_memory_pool().free_all_blocks()
print("cupy async pool and mmap done")
