# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""PyTorch ending without an exit handler, for tests/gpu/run.sh.

  torch_endings.py os_exit   20 segments of 64 MiB freed by empty_cache(),
                             between the markers of tests/gpu/marker.py,
                             then os._exit(0) (as multiprocessing's fork
                             children and fast-shutdown programs end):
                             prints frees_made=N (torch's segment.all.freed)
                             before it goes.
  torch_endings.py train     an MLP trained with Adam, empty_cache() every
                             20 steps, printing "step=N" lines until it is
                             killed (the caller sends SIGKILL)."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import marker  # noqa: E402

mode = sys.argv[1] if len(sys.argv) > 1 else ""
torch.manual_seed(0)
torch.zeros(1, device="cuda")
torch.cuda.synchronize()

if mode == "os_exit":
    before = torch.cuda.memory_stats()["segment.all.freed"]
    used_at_start = marker.used_bytes()
    marker.mark()
    held = [torch.empty(64 << 20, dtype=torch.uint8, device="cuda") for _ in range(20)]
    torch.cuda.synchronize()
    del held
    torch.cuda.empty_cache()
    marker.mark()
    freed = torch.cuda.memory_stats()["segment.all.freed"] - before
    print(f"frees_made={freed}", flush=True)
    marker.report_mem_delta(used_at_start)
    sys.stderr.flush()
    os._exit(0)
elif mode == "train":
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 1024)).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    step = 0
    while True:
        x = torch.randn(128 * (1 + step % 7), 1024, device="cuda")
        loss = model(x).square().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        step += 1
        if step % 20 == 0:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            print(f"step={step}", flush=True)
else:
    sys.exit("usage: torch_endings.py os_exit|train")
