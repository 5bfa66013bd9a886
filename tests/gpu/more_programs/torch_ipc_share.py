# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""CUDA tensors shared with a spawned child through torch.multiprocessing
(CUDA IPC): the child opens the parent's tensors, checks and changes them
in place, and shares tensors of its own back, which the parent reads
while the child waits; the parent frees its tensors only after the child
is done. Once with the caching allocator's default segments (the child
opens cudaIpc handles) and once with expandable segments (the child
imports exported memory handles), each in a process of its own; the
child inherits LD_PRELOAD through the environment. Every sum is printed
by the parent, so the order of lines is fixed. Run plain and hooked by
tests/gpu/more_programs.sh."""
import os
import subprocess
import sys

CONFIGS = {"default": "", "expandable": "expandable_segments:True"}


def child(inbox, outbox, done):
    import torch
    tensors = inbox.get()
    sums = [int(t.sum().item()) for t in tensors]
    for t in tensors:
        t.add_(1)
    torch.cuda.synchronize()
    own = [torch.full((n,), 3, dtype=torch.int64, device="cuda") for n in (1000, 1 << 20)]
    outbox.put((sums, own))
    done.wait(40)
    del tensors, own
    torch.cuda.synchronize()


def run_config():
    import torch
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    # SimpleQueue pickles in the caller: a tensor that cannot be shared
    # raises here instead of in a feeder thread, leaving the reader hung.
    inbox, outbox, done = ctx.SimpleQueue(), ctx.SimpleQueue(), ctx.Event()
    proc = ctx.Process(target=child, args=(inbox, outbox, done), daemon=True)
    proc.start()
    sizes = (17, 4096, 1 << 20, 3 << 20)
    tensors = [torch.arange(n, dtype=torch.int64, device="cuda") for n in sizes]
    inbox.put(tensors)
    sums, theirs = outbox.get()
    their_sums = [int(t.sum().item()) for t in theirs]
    del theirs
    done.set()
    proc.join(30)
    after = [int(t.sum().item()) for t in tensors]
    expected = [n * (n - 1) // 2 for n in sizes]
    print(f"child saw {sums == expected}, parent sees child's change "
          f"{after == [e + n for e, n in zip(expected, sizes)]}, child's tensors {their_sums}, "
          f"child exit {proc.exitcode}")
    del tensors
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    # Memory reused after the child has let go of it.
    again = torch.ones(3 << 20, dtype=torch.int64, device="cuda")
    print(f"reused sum {int(again.sum().item())}")


def main():
    if len(sys.argv) > 1:
        run_config()
        return
    try:
        import torch
    except ImportError:
        print("skip: no torch")
        return
    if not torch.cuda.is_available():
        print("skip: no CUDA device")
        return
    for name, conf in CONFIGS.items():
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=conf)
        # A child of its own per allocator setting: the setting is read
        # once, when torch first allocates.
        try:
            result = subprocess.run([sys.executable, __file__, name], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, timeout=50)
        except subprocess.TimeoutExpired:
            print(f"{name}: timed out")
            continue
        lines = result.stdout.strip().splitlines() or ["(nothing)"]
        for line in lines:
            print(f"{name}: {line}")
        if result.returncode:
            # The last line names the error without addresses or pids.
            tail = (result.stderr.strip().splitlines() or ["?"])[-1]
            print(f"{name}: exit {result.returncode}: {tail.split(':')[0]}")


if __name__ == "__main__":
    main()
