# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""CuPy with a memory pool of the program's own: a cudaMemPoolCreate pool
behind a PythonFunctionAllocator (cudaMallocFromPoolAsync and
cudaFreeAsync on the current stream), with cuFFT plans (their work areas
come from the allocator) and a RawKernel over its arrays; the pool
trimmed and destroyed. Then pinned host buffers from a PinnedMemoryPool
(cudaHostAlloc), managed memory, a numpy array registered with
cudaHostRegister, and cudaPointerGetAttributes on each, before and after
it is freed or unregistered: the memory types printed must be the
driver's. Run plain and hooked by tests/gpu/more_programs.sh."""
import sys

try:
    import cupy as cp
    import numpy as np
except ImportError:
    print("skip: no cupy")
    sys.exit(0)

rt = cp.cuda.runtime
# cudaMemAllocationTypePinned, cudaMemHandleTypeNone, cudaMemLocationTypeDevice.
PINNED, NO_HANDLE, ON_DEVICE = 1, 0, 1
KERNEL = cp.RawKernel(r"""
extern "C" __global__ void scale_add(const long long* a, long long* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * 3 + i;
}
""", "scale_add")


def attributes(label, ptr):
    try:
        a = rt.pointerGetAttributes(ptr)
    except rt.CUDARuntimeError as e:
        print(f"{label}: {e}")
        return
    print(f"{label}: type {a.type} device {a.device} device pointer "
          f"{relation(a.devicePointer, ptr)} host pointer {relation(a.hostPointer, ptr)}")


def relation(answer, ptr):
    return "same" if answer == ptr else "null" if not answer else "other"


def own_pool_work():
    pool = rt.memPoolCreate(rt.MemPoolProps(PINNED, NO_HANDLE, ON_DEVICE, 0))
    live = {}

    def malloc(size, device_id):
        ptr = rt.mallocFromPoolAsync(size, pool, cp.cuda.get_current_stream().ptr)
        live[ptr] = size
        return ptr

    def free(ptr, device_id):
        live.pop(ptr)
        rt.freeAsync(ptr, cp.cuda.get_current_stream().ptr)

    allocator = cp.cuda.memory.PythonFunctionAllocator(malloc, free)
    checks, kernel_sums, kept = [], [], None
    with cp.cuda.using_allocator(allocator.malloc):
        for n in (1 << 10, 3 << 12, 1 << 16, 5 << 14, 1 << 20):
            x = cp.arange(n, dtype=cp.float64) % 17
            spectrum = cp.fft.fft(x)
            back = cp.fft.ifft(spectrum).real
            dc_right = abs(float(spectrum[0].real) - float(x.sum())) < 1e-6 * n
            checks.append(bool(cp.allclose(back, x)) and dc_right)
            a = cp.arange(n, dtype=cp.int64)
            out = cp.empty_like(a)
            KERNEL(((n + 255) // 256,), (256,), (a, out, cp.int32(n)))
            kernel_sums.append(int(out.sum()))
            del x, spectrum, back, a, out
        kept = cp.ones(1 << 20, dtype=cp.int32)
        attributes("own pool array", kept.data.ptr)
        cp.fft.config.get_plan_cache().clear()
        del kept
    cp.cuda.get_current_stream().synchronize()
    print("fft round trips", checks, "kernel sums", kernel_sums, "left in pool", len(live))
    rt.memPoolTrimTo(pool, 0)
    if not live:  # a pool with allocations out cannot be destroyed
        rt.memPoolDestroy(pool)


def host_and_managed():
    pinned_pool = cp.cuda.PinnedMemoryPool()
    cp.cuda.set_pinned_memory_allocator(pinned_pool.malloc)
    pinned = cp.cuda.alloc_pinned_memory(1 << 20)
    attributes("pinned pool block", pinned.ptr)
    device = cp.arange(1 << 18, dtype=cp.int32)
    host = np.frombuffer(pinned, dtype=np.int32, count=1 << 18)
    device.get(out=host)
    print("pinned copy sum", int(host.sum()))
    del host, pinned
    managed = cp.cuda.malloc_managed(1 << 20)
    attributes("managed", managed.ptr)
    managed_ptr = managed.ptr
    del managed
    attributes("managed freed", managed_ptr)
    array = np.zeros(1 << 18, dtype=np.int32)
    ptr = array.ctypes.data
    attributes("numpy unregistered", ptr)
    rt.hostRegister(ptr, array.nbytes, 0)
    attributes("numpy registered", ptr)
    device.get(out=array)
    print("registered copy sum", int(array.sum()))
    rt.hostUnregister(ptr)
    attributes("numpy unregistered again", ptr)
    one = cp.zeros(3 << 20, dtype=cp.uint8)
    attributes("default pool array", one.data.ptr)
    one_ptr = one.data.ptr
    del one, device
    cp.get_default_memory_pool().free_all_blocks()
    attributes("default pool array freed", one_ptr)
    pinned_pool.free_all_blocks()


def main():
    if rt.getDeviceCount() == 0:
        print("skip: no CUDA device")
        return
    own_pool_work()
    host_and_managed()
    print("done")


if __name__ == "__main__":
    main()
