# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""PyTorch, whatever allocator PYTORCH_CUDA_ALLOC_CONF picks (modes.sh runs
it with backend:cudaMallocAsync and with the default): a training loop, a
CUDA graph captured on a side stream and replayed, large tensors, then
empty_cache(). Seeded: the line it prints is the same with and without
the shim."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
                            torch.nn.Linear(1024, 64)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
losses = []
for step in range(200):
    x = torch.randn(32 * (1 + step % 5), 256, device="cuda")
    loss = model(x).square().mean()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if step % 50 == 0:
        losses.append(round(loss.item(), 4))

static_x = torch.randn(64, 256, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):  # warm-up before capture, as torch asks
        model(static_x)
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(graph):
    static_y = model(static_x) * 2
outputs = []
for i in range(20):
    static_x.copy_(torch.full((64, 256), 0.01 * i, device="cuda"))
    graph.replay()
    outputs.append(float(static_y.sum()))
del graph

big = [torch.empty(mib << 20, dtype=torch.uint8, device="cuda") for mib in (5, 64, 200)]
del big
torch.cuda.synchronize()
torch.cuda.empty_cache()
print(f"allocator={torch.cuda.get_allocator_backend()} losses={losses} "
      f"graph={round(sum(outputs), 3)}")
