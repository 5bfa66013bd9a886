# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""CUDA graph memory nodes through cuda-python's driver bindings: memory
allocated and freed inside a captured graph (cuMemAllocAsync and
cuMemFreeAsync under stream capture), memory a graph allocates and the
program frees after each launch, and the same built by hand with
cuGraphAddMemAllocNode, a memset node and cuGraphAddMemFreeNode. The
graph-owned addresses are asked cuPointerGetAttribute while live and
after their free; then the graphs are destroyed and cuDeviceGraphMemTrim
returns their memory. Prints values, error names and graph memory
figures, no addresses. Run plain and hooked by tests/gpu/more_programs.sh."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from driver_bindings import driver as cu  # noqa: E402 - after its path

MIB = 1 << 20
ATTR = cu.CUpointer_attribute


def instantiate(graph):
    # The flags form is cuGraphInstantiate itself in newer bindings.
    with_flags = getattr(cu, "cuGraphInstantiateWithFlags", None) or cu.cuGraphInstantiate
    return ok(with_flags(graph, 0))


def ok(result):
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(getattr(err, "name", str(err)))
    return rest[0] if len(rest) == 1 else rest


def answer(ptr):
    """Memory type and range size as the driver gives them, or the error."""
    out = []
    for attr in (ATTR.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ATTR.CU_POINTER_ATTRIBUTE_RANGE_SIZE):
        err, value = cu.cuPointerGetAttribute(attr, ptr)
        out.append(str(int(value)) if err == cu.CUresult.CUDA_SUCCESS else err.name)
    return "/".join(out)


def graph_memory(dev, label):
    attrs = cu.CUgraphMem_attribute
    used = ok(cu.cuDeviceGetGraphMemAttribute(dev, attrs.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT))
    reserved = ok(cu.cuDeviceGetGraphMemAttribute(dev, attrs.CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT))
    print(f"{label}: graph memory used {int(used) // MIB} MiB, reserved {int(reserved) // MIB} MiB")


def read_word(ptr, stream):
    host = bytearray(4)
    ok(cu.cuStreamSynchronize(stream))
    ok(cu.cuMemcpyDtoH(host, ptr, 4))
    return int.from_bytes(host, "little")


def captured(stream, out):
    """One graph that allocates, fills, copies out and frees; one that
    allocates and leaves the free to the program."""
    mode = cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL
    ok(cu.cuStreamBeginCapture(stream, mode))
    scratch = ok(cu.cuMemAllocAsync(4 * MIB, stream))
    ok(cu.cuMemsetD32Async(scratch, 0x01020304, MIB, stream))
    ok(cu.cuMemcpyDtoDAsync(out, scratch, 4 * MIB, stream))
    ok(cu.cuMemFreeAsync(scratch, stream))
    inner = ok(cu.cuStreamEndCapture(stream))
    ok(cu.cuStreamBeginCapture(stream, mode))
    kept = ok(cu.cuMemAllocAsync(6 * MIB, stream))
    ok(cu.cuMemsetD32Async(kept, 77, 6 * MIB // 4, stream))
    outliving = ok(cu.cuStreamEndCapture(stream))
    return inner, outliving, scratch, kept


def by_hand(dev, stream):
    graph = ok(cu.cuGraphCreate(0))
    params = cu.CUDA_MEM_ALLOC_NODE_PARAMS()
    params.poolProps.allocType = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    params.poolProps.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    params.poolProps.location.id = 0
    params.bytesize = 2 * MIB
    alloc = ok(cu.cuGraphAddMemAllocNode(graph, None, 0, params))
    ptr = params.dptr
    memset = cu.CUDA_MEMSET_NODE_PARAMS()
    memset.dst = ptr
    memset.value = 9
    memset.elementSize = 4
    memset.width = 2 * MIB // 4
    memset.height = 1
    ctx = ok(cu.cuCtxGetCurrent())
    filled = ok(cu.cuGraphAddMemsetNode(graph, [alloc], 1, memset, ctx))
    ok(cu.cuGraphAddMemFreeNode(graph, [filled], 1, ptr))
    exec_ = instantiate(graph)
    for _ in range(5):
        ok(cu.cuGraphLaunch(exec_, stream))
    ok(cu.cuStreamSynchronize(stream))
    print("by hand: after launches", answer(ptr))
    ok(cu.cuGraphExecDestroy(exec_))
    ok(cu.cuGraphDestroy(graph))


def main():
    ok(cu.cuInit(0))
    dev = ok(cu.cuDeviceGet(0))
    ctx = ok(cu.cuDevicePrimaryCtxRetain(dev))
    ok(cu.cuCtxSetCurrent(ctx))
    stream = ok(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value))
    out = ok(cu.cuMemAlloc(4 * MIB))
    inner, outliving, scratch, kept = captured(stream, out)
    inner_exec = instantiate(inner)
    outliving_exec = instantiate(outliving)
    words, kept_words = [], []
    for i in range(8):
        ok(cu.cuMemsetD32Async(out, i, MIB, stream))
        ok(cu.cuGraphLaunch(inner_exec, stream))
        words.append(read_word(out, stream))
        ok(cu.cuGraphLaunch(outliving_exec, stream))
        kept_words.append(read_word(kept, stream))
        if i == 0:
            print("captured: scratch after launch", answer(scratch), "kept while live", answer(kept))
            graph_memory(dev, "captured, kept live")
        ok(cu.cuMemFreeAsync(kept, stream))
        ok(cu.cuStreamSynchronize(stream))
    print("captured: copied words", sorted(set(words)), "kept words", sorted(set(kept_words)))
    print("captured: kept after free", answer(kept))
    by_hand(dev, stream)
    for e in (inner_exec, outliving_exec):
        ok(cu.cuGraphExecDestroy(e))
    for g in (inner, outliving):
        ok(cu.cuGraphDestroy(g))
    ok(cu.cuCtxSynchronize())
    ok(cu.cuDeviceGraphMemTrim(dev))
    graph_memory(dev, "destroyed and trimmed")
    print("after trim:", answer(kept), answer(scratch))
    ok(cu.cuMemFree(out))
    ok(cu.cuStreamDestroy(stream))
    ok(cu.cuDevicePrimaryCtxRelease(dev))
    print("graph memory done")


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        # A driver error, by name: the same plain and hooked.
        print("stopped:", e)
