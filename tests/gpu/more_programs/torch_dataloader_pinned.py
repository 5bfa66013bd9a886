# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""A torch DataLoader as training scripts use it: CUDA already in use by a
model, then two worker processes forked (the shim's state goes with them,
though they never touch CUDA), batches pinned by the loader's pin-memory
thread (cudaHostAlloc through the caching host allocator) and copied to
the GPU without blocking; two epochs, the second with persistent workers.
Beside it, a CPU tensor pinned in place with cudaHostRegister and
unregistered, and torch.Tensor.pin_memory(). Sums are of integers, exact.
Run plain and hooked by tests/gpu/more_programs.sh."""
import sys

try:
    import torch
    from torch.utils.data import DataLoader, Dataset
except ImportError:
    print("skip: no torch")
    sys.exit(0)


class Generated(Dataset):
    """Each item made from its index alone, in the worker."""

    def __len__(self):
        return 96

    def __getitem__(self, i):
        return torch.arange(i, i + 4096, dtype=torch.int64), torch.tensor(i % 7)


def epoch(loader, model):
    total, pinned = 0, 0
    for x, y in loader:
        pinned += int(x.is_pinned())
        x = x.cuda(non_blocking=True)
        y = y.cuda(non_blocking=True)
        out = model(x.float()[:, :64])
        total += int(x.sum().item()) + int(y.sum().item()) + int(out.shape[0])
    return total, pinned


def main():
    if not torch.cuda.is_available():
        print("skip: no CUDA device")
        return
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 8).cuda()
    results = []
    for persistent in (False, True):
        loader = DataLoader(Generated(), batch_size=8, shuffle=False, num_workers=2,
                            pin_memory=True, persistent_workers=persistent,
                            multiprocessing_context="fork")
        for _ in range(2):
            results.append(epoch(loader, model))
        del loader
    print("epochs (sum, pinned batches):", results)

    cudart = torch.cuda.cudart()
    host = torch.arange(1 << 20, dtype=torch.int32)
    nbytes = host.numel() * host.element_size()
    err = cudart.cudaHostRegister(host.data_ptr(), nbytes, 0)
    print("register:", int(err), "pinned", host.is_pinned())
    on_gpu = host.cuda(non_blocking=True)
    back = torch.empty_like(host).pin_memory()
    back.copy_(on_gpu * 2, non_blocking=True)
    torch.cuda.synchronize()
    print("round trip", int(back.sum().item()) == 2 * int(host.sum().item()))
    err = cudart.cudaHostUnregister(host.data_ptr())
    print("unregister:", int(err), "pinned", host.is_pinned())
    del back, on_gpu
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    # Frees the cached pinned blocks (cudaFreeHost) where torch has it.
    getattr(torch._C, "_host_emptyCache", lambda: None)()
    print("done")


if __name__ == "__main__":
    main()
