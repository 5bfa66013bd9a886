# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Threads each with a context of its own (cuCtxCreate), all alive at
once: each allocates device, pitched, managed and page-locked host memory
in its context, checks its data and that the memory belongs to its
context, then destroys the context with every allocation still live
(cuCtxDestroy, which frees them) and asks about the memory afterwards.
Then a context made on one thread, popped, pushed on another which frees
its memory and destroys it; and the primary context allocating the same
sizes again. The shim ends each destroyed context's allocations: the
device memory must come back and every answer must be the driver's. Run
plain and hooked by tests/gpu/more_programs.sh."""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from driver_calls import as_int, call, create_context, cu, ok, primary_context  # noqa: E402

MIB = 1 << 20
THREADS = 4
A = cu.CUpointer_attribute
SLACK = 256 * MIB


def free_memory():
    free, _ = ok(cu.cuMemGetInfo)
    return int(free)


def owner(ptr, contexts):
    name, value = call(cu.cuPointerGetAttribute, A.CU_POINTER_ATTRIBUTE_CONTEXT, ptr)
    if name != "CUDA_SUCCESS":
        return name
    return contexts.get(as_int(value), "null" if not as_int(value) else "other")


def after(ptr):
    names = [call(cu.cuPointerGetAttribute, attr, ptr)[0]
             for attr in (A.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, A.CU_POINTER_ATTRIBUTE_BUFFER_ID,
                          A.CU_POINTER_ATTRIBUTE_RANGE_SIZE)]
    return "/".join(names)


def worker(index, dev, contexts, barrier, results, round_):
    lines = []
    try:
        ctx = create_context(dev)
        contexts[as_int(ctx)] = f"ctx{index}"
        size = (1 + index) * 4 * MIB
        device = as_int(ok(cu.cuMemAlloc, size))
        pitched, _ = ok(cu.cuMemAllocPitch, 4000, 100 + index, 4)
        pitched = as_int(pitched)
        managed = as_int(ok(cu.cuMemAllocManaged, MIB, cu.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL.value))
        host = as_int(ok(cu.cuMemAllocHost, MIB))
        ok(cu.cuMemsetD32, device, 1000 * round_ + index, size // 4)
        ok(cu.cuMemcpyDtoD, managed, device, MIB)
        ok(cu.cuCtxSynchronize)
        out = bytearray(16)
        ok(cu.cuMemcpyDtoH, out, managed, 16)
        value = int.from_bytes(out[:4], "little")
        barrier.wait()  # every context alive, with its memory, at once
        memory = {"device": device, "pitched": pitched, "managed": managed, "host": host}
        lines.append(f"data {value == 1000 * round_ + index}; owners " +
                     " ".join(f"{k}={owner(p, contexts)}" for k, p in memory.items()))
        barrier.wait()
        lines.append(f"destroy with memory live: {call(cu.cuCtxDestroy, ctx)[0]}")
        current_name, current = call(cu.cuCtxGetCurrent)
        lines.append(f"current after destroy: {current_name} {'null' if not as_int(current) else 'set'}")
        lines.append("after destroy: " + " ".join(f"{k}={after(p)}" for k, p in memory.items()))
        lines.append(f"free after destroy: {call(cu.cuMemFree, device)[0]} {call(cu.cuMemFreeHost, host)[0]}")
    except Exception as e:  # noqa: BLE001 - printed, compared plain and hooked
        lines.append(f"failed: {e}")
        barrier.abort()
    results[index] = lines


def round_of_threads(dev, round_):
    contexts, results = {}, {}
    barrier = threading.Barrier(THREADS)
    threads = [threading.Thread(target=worker, args=(i, dev, contexts, barrier, results, round_))
               for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(THREADS):
        for line in results.get(i, ["no result"]):
            print(f"round {round_} thread {i}: {line}")


def handed_over(dev):
    box = {}

    def make():
        ctx = create_context(dev)
        box["ctx"] = ctx
        box["ptr"] = as_int(ok(cu.cuMemAlloc, 16 * MIB))
        box["popped"] = call(cu.cuCtxPopCurrent)[0]

    def finish():
        print("push on another thread:", call(cu.cuCtxPushCurrent, box["ctx"])[0])
        print("owner there:", owner(box["ptr"], {as_int(box["ctx"]): "handed"}))
        print("free there:", call(cu.cuMemFree, box["ptr"])[0])
        print("after that free:", after(box["ptr"]))
        print("destroy there:", call(cu.cuCtxDestroy, box["ctx"])[0])

    for fn in (make, finish):
        t = threading.Thread(target=fn)
        t.start()
        t.join()
    print("popped on the first thread:", box["popped"])


def main():
    dev, primary = primary_context()
    free0 = free_memory()
    for round_ in range(2):
        round_of_threads(dev, round_)
    handed_over(dev)
    ok(cu.cuCtxSetCurrent, primary)
    back = free_memory()
    print(f"free memory back after the destroys {abs(back - free0) <= SLACK}")
    sys.stderr.write(f"free {free0 // MIB} MiB at start, {back // MIB} MiB after\n")
    contexts = {as_int(primary): "primary"}
    again = [as_int(ok(cu.cuMemAlloc, (1 + i) * 4 * MIB)) for i in range(THREADS)]
    print("primary allocations owned by:", " ".join(owner(p, contexts) for p in again))
    print("frees:", " ".join(call(cu.cuMemFree, p)[0] for p in again))
    ok(cu.cuDevicePrimaryCtxRelease, dev)
    print("threads with own contexts done")


main()
