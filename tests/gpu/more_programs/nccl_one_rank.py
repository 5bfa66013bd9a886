# NCCL through torch.distributed with one rank: the communicator's own
# buffers (cuMem* or cudaMalloc, by NCCL_CUMEM_ENABLE) besides torch's,
# all_reduce and broadcast over tensors of four sizes, the group destroyed.
# Run plain and hooked by tests/gpu/more_programs.sh.
import os, tempfile
import torch
import torch.distributed as dist
store = tempfile.mktemp(prefix="gdrhook-nccl-")
dist.init_process_group("nccl", init_method=f"file://{store}", rank=0, world_size=1,
                        device_id=torch.device("cuda", 0))
total = 0.0
for k in range(40):
    t = torch.full((1 << (10 + k % 4 * 4),), float(k), device="cuda")
    dist.all_reduce(t)
    dist.broadcast(t, src=0)
    total += t[0].item()
    del t
dist.destroy_process_group()
torch.cuda.empty_cache()
os.path.exists(store) and os.unlink(store)
print(f"nccl one rank ok, sum {total}")
