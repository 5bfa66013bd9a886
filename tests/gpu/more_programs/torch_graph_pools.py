# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""PyTorch's private memory pools: two CUDA graphs captured into one
shared pool (the second with pool=first.pool()), a third into a pool from
graph_pool_handle(), each replayed against eager results; the graphs then
reset and deleted, empty_cache() releasing the pools' segments, and new
tensors reusing the memory. Then torch.cuda.MemPool with use_mem_pool
(where this torch has it) and caching_allocator_alloc/delete. Prints
booleans and exact integers only. Run plain and hooked by
tests/gpu/more_programs.sh."""
import sys

try:
    import torch
except ImportError:
    print("skip: no torch")
    sys.exit(0)


def close(a, b):
    return bool(torch.allclose(a, b, rtol=1e-3, atol=1e-3))


def capture(model, static_x, pool):
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph, pool=pool):
        scratch = torch.empty(8 << 20, device="cuda")  # freed inside the capture
        scratch.fill_(1)
        static_y = model(static_x) + scratch[:1]
        del scratch
    return graph, static_y


def graphs(model):
    xs = [torch.randn(64, 256, device="cuda") for _ in range(3)]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for x in xs:
            model(x)
    torch.cuda.current_stream().wait_stream(side)
    first, y1 = capture(model, xs[0], None)
    second, y2 = capture(model, xs[1], first.pool())
    third, y3 = capture(model, xs[2], torch.cuda.graph_pool_handle())
    agree = []
    for i in range(10):
        for x in xs:
            x.normal_()
        for g in (first, second, third):
            g.replay()
        with torch.no_grad():
            agree += [close(y, model(x) + 1) for y, x in zip((y1, y2, y3), xs)]
    print(f"graph replays agreeing with eager: {sum(agree)} of {len(agree)}")
    for g in (first, second, third):
        g.reset()
    del first, second, third, y1, y2, y3, xs
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    reused = [torch.full((n << 20,), 2, dtype=torch.int32, device="cuda") for n in (1, 8, 24)]
    print("reused after graphs:", [int(t.sum().item()) for t in reused])


def mem_pool():
    if not hasattr(torch.cuda, "MemPool") or not hasattr(torch.cuda, "use_mem_pool"):
        print("MemPool: not in this torch")
        return
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        inside = [torch.full((n << 18,), 3, dtype=torch.int64, device="cuda") for n in (1, 5, 40)]
    outside = torch.ones(1 << 20, dtype=torch.int64, device="cuda")
    print("MemPool sums:", [int(t.sum().item()) for t in inside], int(outside.sum().item()))
    del inside, outside, pool
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def raw_blocks():
    before = torch.cuda.memory_allocated()
    stream = torch.cuda.current_stream()
    ptrs = [torch.cuda.caching_allocator_alloc(n << 20, 0, stream) for n in (1, 3, 9)]
    grew = torch.cuda.memory_allocated() - before
    for p in ptrs:
        torch.cuda.caching_allocator_delete(p)
    print(f"caching_allocator_alloc grew {grew >> 20} MiB, back to start "
          f"{torch.cuda.memory_allocated() == before}")


def main():
    if not torch.cuda.is_available():
        print("skip: no CUDA device")
        return
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 128)).cuda()
    graphs(model)
    mem_pool()
    raw_blocks()
    torch.cuda.empty_cache()
    print("done")


if __name__ == "__main__":
    main()
