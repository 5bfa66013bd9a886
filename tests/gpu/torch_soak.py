# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The soak run's workload: an MLP trained with Adam on random data for a
given number of seconds. Every 50 steps torch.cuda.empty_cache() hands the
cached segments back, so the caching allocator keeps freeing and
reallocating (and the shim keeps unpinning and pinning) for the whole run
instead of settling after the first steps. Prints steps, frees and the last
loss.

usage: torch_soak.py SECONDS"""
import sys
import time

import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 600
torch.manual_seed(0)
teacher = torch.nn.Linear(512, 256).cuda().requires_grad_(False)
model = torch.nn.Sequential(
    torch.nn.Linear(512, 4096), torch.nn.ReLU(),
    torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
    torch.nn.Linear(4096, 256),
).cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
start = time.monotonic()
step = 0
while time.monotonic() - start < seconds:
    batch = 256 * (1 + step % 9)  # varying shapes make the allocator work
    x = torch.randn(batch, 512, device="cuda")
    loss = torch.nn.functional.mse_loss(model(x), teacher(x))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    step += 1
    if step % 50 == 0:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    if step % 2000 == 0:
        print(f"t={time.monotonic() - start:.0f}s step={step} loss={loss.item():.4f}", flush=True)
torch.cuda.synchronize()
freed = torch.cuda.memory_stats()["segment.all.freed"]
print(f"steps={step} segments_freed={freed} loss={loss.item():.4f}")
