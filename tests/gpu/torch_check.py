# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""PyTorch under the shim: a small MLP trained for 300 steps with Adam on
random data (a fixed teacher network to learn), then empty_cache().
Default allocator: every segment the caching allocator frees is a cudaFree,
counted by torch itself (segment.all.freed). expandable_segments:True frees
with cuMemUnmap + cuMemRelease; torch's memory history gives the bytes it
unmapped, printed as unmapped_bytes=N for the event-log cross-check.
Deterministic (seeded, deterministic algorithms), so the loss it prints is
the same with and without the shim."""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import marker  # noqa: E402

STEPS = 300

expandable = "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
used_at_start = marker.used_bytes()
torch.cuda.memory._record_memory_history(max_entries=1_000_000)
before = torch.cuda.memory_stats()
marker.mark()

teacher = torch.nn.Linear(512, 256).cuda().requires_grad_(False)
model = torch.nn.Sequential(
    torch.nn.Linear(512, 2048), torch.nn.ReLU(),
    torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
    torch.nn.Linear(2048, 256),
).cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
losses = []
for step in range(STEPS):
    batch = 64 * (1 + step % 7)  # varying shapes make the allocator work
    x = torch.randn(batch, 512, device="cuda")
    loss = torch.nn.functional.mse_loss(model(x), teacher(x))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if step % 50 == 0 or step == STEPS - 1:
        losses.append(loss.item())
big = [torch.empty(int(s) << 20, dtype=torch.uint8, device="cuda") for s in (3, 50, 120, 7, 300)]
del big, x, loss
del model, optimizer, teacher
torch.cuda.synchronize()
torch.cuda.empty_cache()
marker.mark()
after = torch.cuda.memory_stats()
marker.report_mem_delta(used_at_start)

print(f"steps={STEPS} loss=" + " ".join(f"{v:.3f}" for v in losses))
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
