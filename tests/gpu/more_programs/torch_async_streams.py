# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""PyTorch on its cudaMallocAsync backend (stream-ordered pool frees) with
several streams: tensors made on one stream and used and dropped on
another (record_stream, so the free waits for that stream), four threads
each allocating and freeing on a stream of its own at once, then
empty_cache() and the allocator's own counters, which must come back to
zero. Integer sums only. Run plain and hooked by
tests/gpu/more_programs.sh."""
import os
import sys
import threading

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
try:
    import torch
except ImportError:
    print("skip: no torch")
    sys.exit(0)


def cross_stream(rounds):
    producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
    total = 0
    for i in range(rounds):
        with torch.cuda.stream(producer):
            t = torch.full(((1 + i % 5) << 18,), i, dtype=torch.int64, device="cuda")
        consumer.wait_stream(producer)
        with torch.cuda.stream(consumer):
            t.record_stream(consumer)
            total += int((t * 2).sum().item())
        del t  # freed on the producer's stream once the consumer is past it
    torch.cuda.synchronize()
    return total


def worker(k, sums):
    stream = torch.cuda.Stream()
    acc = 0
    with torch.cuda.stream(stream):
        for i in range(40):
            a = torch.arange((k + 1) << (12 + i % 6), dtype=torch.int64, device="cuda")
            acc += int(a.sum().item())
            del a
    stream.synchronize()
    sums[k] = acc


def main():
    if not torch.cuda.is_available():
        print("skip: no CUDA device")
        return
    print("backend", torch.cuda.get_allocator_backend())
    print("cross stream sum", cross_stream(60))
    sums = [0] * 4
    threads = [threading.Thread(target=worker, args=(k, sums)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("thread sums", sums)
    held = [torch.empty(mib << 20, dtype=torch.uint8, device="cuda") for mib in (3, 17, 64)]
    print("allocated while holding", torch.cuda.memory_allocated() >> 20, "MiB")
    del held
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    print("allocated after empty_cache", torch.cuda.memory_allocated())
    again = torch.ones(32 << 20, dtype=torch.uint8, device="cuda")
    print("reuse sum", int(again.sum().item()))
    del again
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    print("done")


if __name__ == "__main__":
    main()
