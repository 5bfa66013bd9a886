# torch.compile, default and reduce-overhead (CUDA graphs), against eager.
# Run plain and hooked by tests/gpu/more_programs.sh.
import torch
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)).cuda()
f = torch.compile(m)
x = torch.randn(64, 512, device='cuda')
for _ in range(3):
    y = f(x)
torch.cuda.synchronize()
g = torch.compile(m, mode="reduce-overhead")
for _ in range(4):
    z = g(x).clone()
torch.cuda.synchronize()
print("compiled", tuple(y.shape), round(float((y - m(x)).abs().max()) < 1e-3), round(float((z - m(x)).abs().max()) < 1e-3))
del m, f, g, x, y, z
torch.cuda.empty_cache()
print("ok")
