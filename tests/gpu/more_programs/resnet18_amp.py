# torchvision resnet18, 20 mixed-precision training steps at three image sizes.
# Run plain and hooked by tests/gpu/more_programs.sh.
import torch, torchvision
torch.manual_seed(0)
m = torchvision.models.resnet18(num_classes=10).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.01)
scaler = torch.amp.GradScaler()
for step in range(20):
    x = torch.randn(32, 3, 64 + 16 * (step % 3), 64 + 16 * (step % 3), device='cuda')
    y = torch.randint(0, 10, (32,), device='cuda')
    with torch.autocast('cuda', dtype=torch.float16):
        loss = torch.nn.functional.cross_entropy(m(x), y)
    opt.zero_grad(); scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
torch.cuda.synchronize()
print("resnet18 steps", step + 1, "finite", bool(torch.isfinite(loss)))
