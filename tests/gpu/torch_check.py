# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""PyTorch under the shim: a small training loop, then empty_cache().
Default allocator: every segment the caching allocator frees is a cudaFree,
counted by torch itself (segment.all.freed). expandable_segments:True frees
with cuMemUnmap + cuMemRelease; torch's memory history gives the bytes it
unmapped, printed as unmapped_bytes=N for the event-log cross-check."""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
import marker  # noqa: E402

expandable = "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
torch.manual_seed(0)
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
free_at_start = torch.cuda.mem_get_info()[0]
torch.cuda.memory._record_memory_history(max_entries=1_000_000)
before = torch.cuda.memory_stats()
marker.mark()

model = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)
).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
loss_value = 0.0
for step in range(60):
    batch = 64 * (1 + step % 7)  # varying shapes make the allocator work
    x = torch.randn(batch, 1024, device="cuda")
    loss = model(x).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    loss_value = loss.item()
big = [torch.empty(int(s) << 20, dtype=torch.uint8, device="cuda") for s in (3, 50, 120, 7, 300)]
del big, x, loss
del model, optimizer
torch.cuda.synchronize()
torch.cuda.empty_cache()
marker.mark()
after = torch.cuda.memory_stats()
# GPU memory back where it started once everything is freed (a dma-buf pin
# that outlived its free would keep it): the shim's worker unpins within
# microseconds; allow it a moment.
time.sleep(0.2)
print(f"note mem_used_delta={free_at_start - torch.cuda.mem_get_info()[0]}", file=sys.stderr)

print(f"loss={loss_value:.3f}")
if expandable:
    snapshot = torch.cuda.memory._snapshot()
    unmapped = sum(
        entry["size"]
        for trace in snapshot["device_traces"]
        for entry in trace
        if entry["action"] == "segment_unmap"
    )
    print(f"expect unmapped_bytes={unmapped}", file=sys.stderr)
    print("expect_same unmaps releases", file=sys.stderr)
else:
    print(f"expect frees={after['segment.all.freed'] - before['segment.all.freed']}", file=sys.stderr)
    # The segments torch says it freed, by address, to explain any difference.
    for trace in torch.cuda.memory._snapshot()["device_traces"]:
        for entry in trace:
            if entry["action"] == "segment_free":
                print(f"note segment_free {entry['addr']:#x} {entry['size']}", file=sys.stderr)
