# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Device memory allocated until the driver refuses: cuMemAlloc in 1 GiB
pieces through cuda-python, then 64 MiB pieces, the first refusal's error
and what a stream-ordered and a small allocation answer on a full device;
everything freed, the free memory back and one allocation of nearly all of
it granted. Then the same through PyTorch's caching allocator, until
torch.cuda.OutOfMemoryError. A shim whose pins held device memory would
change how many pieces fit (printed as GiB short of what was free at the
start), or keep memory after the frees. Run plain and hooked by
tests/gpu/more_programs.sh."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from driver_calls import as_int, call, cu, ok, primary_context  # noqa: E402 - after its path

MIB = 1 << 20
GIB = 1 << 30
# Free memory after everything is freed may differ from the start by the
# driver's own bookkeeping, never by whole pieces.
SLACK = 256 * MIB


def free_memory():
    free, _total = ok(cu.cuMemGetInfo)
    return int(free)


def fill(pieces, size):
    """Allocate `size` pieces until refused; the refusal's name."""
    while True:
        name, ptr = call(cu.cuMemAlloc, size)
        if name != "CUDA_SUCCESS":
            return name
        pieces.append(as_int(ptr))


def driver_until_refused():
    primary_context()
    free0 = free_memory()
    big, small = [], []
    refusal = fill(big, GIB)
    print(f"driver: first 1 GiB refusal {refusal}, {free0 // GIB - len(big)} GiB short of free at start")
    refusal = fill(small, 64 * MIB)
    print(f"driver: first 64 MiB refusal {refusal}")
    sys.stderr.write(f"driver: {len(big)} GiB + {len(small)} x 64 MiB of {free0 // MIB} MiB free\n")
    stream = ok(cu.cuStreamCreate, 0)
    name, ptr = call(cu.cuMemAllocAsync, GIB, stream)
    print(f"driver: cuMemAllocAsync of 1 GiB on a full device {name}")
    if name == "CUDA_SUCCESS":
        ok(cu.cuMemFreeAsync, ptr, stream)
    ok(cu.cuStreamSynchronize, stream)
    ok(cu.cuStreamDestroy, stream)
    results = {call(cu.cuMemFree, p)[0] for p in big + small}
    print(f"driver: frees {sorted(results)}")
    back = free_memory()
    print(f"driver: free memory back after the frees {abs(back - free0) <= SLACK}")
    sys.stderr.write(f"driver: free {free0 // MIB} MiB at start, {back // MIB} MiB after\n")
    name, ptr = call(cu.cuMemAlloc, free0 - GIB)
    print(f"driver: one allocation of free-at-start less 1 GiB {name}")
    if name == "CUDA_SUCCESS":
        ok(cu.cuMemFree, ptr)


def torch_until_refused():
    try:
        import torch
    except ImportError:
        print("torch: skip, no torch")
        return
    free0, _ = torch.cuda.mem_get_info()
    tensors = []
    try:
        while True:
            tensors.append(torch.empty(GIB, dtype=torch.uint8, device="cuda"))
    except Exception as e:  # noqa: BLE001 - its type is the answer
        print(f"torch: first refusal {type(e).__name__}, {free0 // GIB - len(tensors)} GiB short of free at start")
    for i, t in enumerate(tensors[:4]):
        t.fill_(i)
    sums = [int(t[:MIB].sum()) for t in tensors[:4]]
    print(f"torch: the first tensors still hold their values {sums == [i * MIB for i in range(len(sums))]}")
    del tensors, t
    torch.cuda.empty_cache()
    print(f"torch: reserved after empty_cache {torch.cuda.memory_reserved()}")
    back, _ = torch.cuda.mem_get_info()
    print(f"torch: free memory back after the frees {abs(back - free0) <= SLACK}")
    whole = torch.empty(free0 - 2 * GIB, dtype=torch.uint8, device="cuda")
    whole[-1] = 7
    print(f"torch: one tensor of free-at-start less 2 GiB, last byte {int(whole[-1])}")
    del whole
    torch.cuda.empty_cache()


driver_until_refused()
torch_until_refused()
print("out of memory done")
