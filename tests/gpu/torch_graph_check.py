# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""PyTorch training steps captured with torch.cuda.graph (global capture
mode, PyTorch's default) under the shim: a small MLP whose forward,
backward and Adam step are captured once (after warm-up on a side stream,
as the PyTorch docs show) and replayed 200 times on fresh data copied
into the static input, then empty_cache(). A capture the shim invalidated
would raise here. Deterministic, so the losses it prints are the same
with and without the shim; the segments torch frees are counted by torch
(segment.all.freed)."""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import marker  # noqa: E402

REPLAYS = 200

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
used_at_start = marker.used_bytes()
before = torch.cuda.memory_stats()
marker.mark()

teacher = torch.nn.Linear(512, 256).cuda().requires_grad_(False)
model = torch.nn.Sequential(
    torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256),
).cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
static_x = torch.randn(256, 512, device="cuda")

side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):  # warm-up, as torch.cuda.graph requires
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(static_x), teacher(static_x))
        loss.backward()
        optimizer.step()
torch.cuda.current_stream().wait_stream(side)

graph = torch.cuda.CUDAGraph()
optimizer.zero_grad(set_to_none=True)
with torch.cuda.graph(graph):  # capture_error_mode defaults to "global"
    static_loss = torch.nn.functional.mse_loss(model(static_x), teacher(static_x))
    static_loss.backward()
    optimizer.step()

losses = []
for step in range(REPLAYS):
    static_x.copy_(torch.randn(256, 512, device="cuda"))
    graph.replay()
    if step % 50 == 0 or step == REPLAYS - 1:
        losses.append(static_loss.item())
del graph, static_loss, static_x, loss, model, optimizer, teacher
torch.cuda.synchronize()
torch.cuda.empty_cache()
marker.mark()
after = torch.cuda.memory_stats()
marker.report_mem_delta(used_at_start)

print(f"replays={REPLAYS} loss=" + " ".join(f"{v:.3f}" for v in losses))
print(f"expect frees={after['segment.all.freed'] - before['segment.all.freed']}", file=sys.stderr)
