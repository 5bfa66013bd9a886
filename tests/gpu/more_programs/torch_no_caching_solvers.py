# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""PyTorch with its caching allocator off (PYTORCH_NO_CUDA_MEMORY_CACHING=1:
every tensor is a cudaMalloc and its drop a cudaFree), through the
libraries that allocate workspaces of their own: cuSOLVER (a solve, a QR,
an eigendecomposition), cuSPARSE (a sparse-dense product), cuBLAS and
cuBLASLt (matrix products in float64 and bfloat16), cuFFT. Each result is
checked against its own definition and printed rounded, so plain and
hooked runs print the same. Run plain and hooked by
tests/gpu/more_programs.sh."""
import os
import sys

os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
try:
    import torch
except ImportError:
    print("skip: no torch")
    sys.exit(0)


def check(name, ok):
    print(f"{name}: {'ok' if ok else 'WRONG'}")
    return ok


def main():
    if not torch.cuda.is_available():
        print("skip: no CUDA device")
        return 0
    torch.manual_seed(0)
    dev = "cuda"
    good = True
    for n in (64, 256, 1024):
        a = torch.randn(n, n, dtype=torch.float64, device=dev) + n * torch.eye(n, device=dev,
                                                                                dtype=torch.float64)
        b = torch.randn(n, 8, dtype=torch.float64, device=dev)
        x = torch.linalg.solve(a, b)
        good &= check(f"solve {n}", torch.allclose(a @ x, b, atol=1e-8))
        q, r = torch.linalg.qr(a)
        good &= check(f"qr {n}", torch.allclose(q @ r, a, atol=1e-8))
        s = a + a.T
        w, v = torch.linalg.eigh(s)
        good &= check(f"eigh {n}", torch.allclose(v @ torch.diag(w) @ v.T, s, atol=1e-6))
        del a, b, x, q, r, s, w, v
    idx = torch.randint(0, 4096, (2, 20000), device=dev)
    sp = torch.sparse_coo_tensor(idx, torch.ones(20000, device=dev), (4096, 4096)).coalesce()
    dense = torch.randn(4096, 64, device=dev)
    good &= check("spmm", torch.allclose(sp @ dense, sp.to_dense() @ dense, atol=1e-3))
    for dtype, tol in ((torch.float64, 1e-9), (torch.bfloat16, 5e-2)):
        m = torch.randn(512, 512, device=dev).to(dtype)
        ref = (m.double() @ m.double())
        good &= check(f"matmul {dtype}",
                      torch.allclose((m @ m).double(), ref, rtol=tol, atol=tol * 512))
    signal = torch.randn(1 << 16, device=dev)
    good &= check("fft", torch.allclose(torch.fft.ifft(torch.fft.fft(signal)).real, signal,
                                        atol=1e-4))
    torch.cuda.synchronize()
    print(f"allocated at the end: {torch.cuda.memory_allocated()}")
    return 0 if good else 1


sys.exit(main())
