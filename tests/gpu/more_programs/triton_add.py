# a Triton kernel over tensors of five sizes, freed each round.
# Run plain and hooked by tests/gpu/more_programs.sh.
import torch, triton, triton.language as tl
@triton.jit
def add(x, y, o, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    m = i < n
    tl.store(o + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)
for k in range(20):
    n = 1 << (16 + k % 5)
    a = torch.arange(n, device='cuda', dtype=torch.float32); b = torch.ones_like(a); c = torch.empty_like(a)
    add[(triton.cdiv(n, 1024),)](a, b, c, n, B=1024)
    assert torch.equal(c, a + 1)
    del a, b, c
torch.cuda.empty_cache()
print("triton ok")
