# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""PyTorch with its cudaMallocAsync allocator backend
(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, set before torch is
imported): tensors made on side streams and freed after use on another
(record_stream), pinned host copies with non_blocking, a CUDA graph
captured with memory freed inside the capture and replayed against eager
results, then empty_cache trimming the pool and new tensors of the freed
sizes. Integer arithmetic, so every sum printed is exact. Run plain and
hooked by tests/gpu/more_programs.sh."""
import os
import sys

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
try:
    import torch
except ImportError:
    print("skip: no torch")
    sys.exit(0)


def cross_stream_frees():
    streams = [torch.cuda.Stream() for _ in range(3)]
    main = torch.cuda.current_stream()
    sums = []
    for round_ in range(24):
        n = (1 + round_ % 5) << (12 + round_ % 7)
        producer = streams[round_ % 3]
        with torch.cuda.stream(producer):
            a = torch.arange(n, device="cuda", dtype=torch.int64)
            b = a * 3 + round_
        main.wait_stream(producer)
        b.record_stream(main)
        c = (b % 1000).sum()
        del a, b  # freed on the producer, used on main: the allocator waits for main
        consumer = streams[(round_ + 1) % 3]
        consumer.wait_stream(main)
        with torch.cuda.stream(consumer):
            d = torch.full((n,), round_, device="cuda", dtype=torch.int64)
            e = int((d + c).sum())
        sums.append(e % 1000003)
        del d
    torch.cuda.synchronize()
    print("cross-stream sums", sums)


def pinned_copies():
    host = torch.empty(1 << 20, dtype=torch.int32).pin_memory()
    host.copy_(torch.arange(1 << 20, dtype=torch.int32))
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        dev = host.to("cuda", non_blocking=True)
        dev.mul_(2)
        back = torch.empty_like(host).pin_memory()
        back.copy_(dev, non_blocking=True)
    side.synchronize()
    print("pinned round trip sum", int(back.to(torch.int64).sum()))


def graph_with_frees():
    static_x = torch.arange(1 << 16, device="cuda", dtype=torch.int64)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            (static_x * 2).sum()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        scratch = torch.empty(4 << 20, device="cuda", dtype=torch.int64)
        scratch.fill_(5)
        static_y = (static_x * 7 + scratch[: 1 << 16]) % 1013
        del scratch
    agree = []
    for i in range(6):
        static_x.copy_(torch.arange(1 << 16, device="cuda", dtype=torch.int64) * (i + 1))
        graph.replay()
        eager = (static_x * 7 + 5) % 1013
        agree.append(bool(torch.equal(static_y, eager)))
    print("graph replays agree", agree)
    del graph, static_y


def main():
    if not torch.cuda.is_available():
        print("skip: no cuda")
        return
    print("backend", torch.cuda.get_allocator_backend())
    cross_stream_frees()
    pinned_copies()
    graph_with_frees()
    torch.cuda.synchronize()
    print("allocated after the frees", torch.cuda.memory_allocated())
    torch.cuda.empty_cache()
    again = [torch.ones((1 + k) << 18, device="cuda", dtype=torch.int64) for k in range(8)]
    print("new tensors sum", sum(int(t.sum()) for t in again))
    del again
    torch.cuda.synchronize()
    print("torch malloc async backend done")


main()
