# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Several GPUs under the shim: started by torchrun (one process per GPU),
each rank trains the same MLP with DistributedDataParallel for 200 steps,
its gradients all-reduced through NCCL (whose buffers come from cuMem*
calls), then tears everything down and empties torch's cache. Rank 0
prints the final loss and a checksum of the weights, which must be the
same with and without the shim, and the memory its GPU got back
(mem_used_delta=N, for tests/gpu/run.sh).

usage: torchrun --standalone --nproc-per-node=N tests/gpu/ddp_check.py"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import marker  # noqa: E402

STEPS = 200

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
used_at_start = marker.used_bytes()
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)

teacher = torch.nn.Linear(512, 256).cuda().requires_grad_(False)
model = DistributedDataParallel(torch.nn.Sequential(
    torch.nn.Linear(512, 2048), torch.nn.ReLU(),
    torch.nn.Linear(2048, 256),
).cuda(), device_ids=[local_rank])
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
generator = torch.Generator(device="cuda").manual_seed(1000 + rank)  # each rank its own data
for step in range(STEPS):
    x = torch.randn(256, 512, device="cuda", generator=generator)
    loss = torch.nn.functional.mse_loss(model(x), teacher(x))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()  # the all-reduce
    optimizer.step()
total = loss.detach().clone()
dist.all_reduce(total)
checksum = sum(p.double().sum().item() for p in model.parameters())
if rank == 0:
    print(f"ranks={world} steps={STEPS} mean_loss={total.item() / world:.4f} "
          f"checksum={checksum:.4f}")
dist.destroy_process_group()
del model, optimizer, teacher, x, loss, total
torch.cuda.synchronize()
torch.cuda.empty_cache()
# What this rank knows it freed: torch's caching allocator counts its own
# cudaFree calls. NCCL keeps no count of its frees; all its cuMem mappings
# must be gone, though, once the process group is destroyed.
print(f"expect_min frees={torch.cuda.memory_stats()['segment.all.freed']}", file=sys.stderr)
if rank == 0:
    print("expect_same maps unmaps", file=sys.stderr)
    marker.report_mem_delta(used_at_start)
