# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""PyTorch with an allocator of the program's own
(torch.cuda.memory.CUDAPluggableAllocator): a small library compiled here
whose malloc and free call cudaMalloc and cudaFree for every tensor, with
no caching, so that each tensor PyTorch makes and drops is an allocation
and a free of the runtime's. Runs a few hundred tensor operations and
prints their results and the library's own counts of its calls. Run plain
and hooked by tests/gpu/more_programs.sh."""
import ctypes
import os
import subprocess
import sys
import tempfile

SOURCE = r"""
#include <cuda_runtime_api.h>
#include <sys/types.h>
#include <atomic>
static std::atomic<long> mallocs{0}, frees{0}, failures{0};
extern "C" {
void *program_malloc(ssize_t size, int device, cudaStream_t stream)
{
    void *p = nullptr;
    if (cudaSetDevice(device) != cudaSuccess || cudaMalloc(&p, size) != cudaSuccess) {
        failures++;
        return nullptr;
    }
    mallocs++;
    return p;
}
void program_free(void *p, ssize_t size, int device, cudaStream_t stream)
{
    // The tensor's last kernel may still run on its stream.
    cudaStreamSynchronize(stream);
    if (cudaFree(p) != cudaSuccess)
        failures++;
    frees++;
}
long program_mallocs() { return mallocs; }
long program_frees() { return frees; }
long program_failures() { return failures; }
}
"""


def build(folder):
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    source = os.path.join(folder, "allocator.cpp")
    library = os.path.join(folder, "liballocator.so")
    with open(source, "w") as f:
        f.write(SOURCE)
    subprocess.run(["g++", "-O2", "-shared", "-fPIC", f"-I{cuda}/include", source, "-o", library,
                    f"-L{cuda}/lib64", "-lcudart", f"-Wl,-rpath,{cuda}/lib64"], check=True)
    return library


def main():
    try:
        import torch
    except ImportError:
        print("skip: no torch")
        return
    if not torch.cuda.is_available():
        print("skip: no GPU")
        return
    with tempfile.TemporaryDirectory() as folder:
        library = build(folder)
        allocator = torch.cuda.memory.CUDAPluggableAllocator(library, "program_malloc", "program_free")
        torch.cuda.memory.change_current_allocator(allocator)
        counts = ctypes.CDLL(library)
        torch.manual_seed(0)
        x = torch.arange(1 << 20, device="cuda", dtype=torch.float64)
        sums = []
        for i in range(200):
            # A new tensor each time, dropped at the end of the iteration.
            y = (x * (i % 7) + i).reshape(1024, 1024)
            sums.append(int(y.sum().item()))
        big = torch.ones(64 << 20, device="cuda", dtype=torch.uint8)
        print("big sum:", int(big.sum().item()))
        del big, y
        m = torch.randn(512, 512, device="cuda", dtype=torch.float64)
        print("matmul trace:", round(float((m @ m.T).trace().item()), 3))
        del m
        torch.cuda.synchronize()
        print("sums:", sums[:5], "...", sums[-3:], "distinct", len(set(sums)))
        print("allocator calls: mallocs", counts.program_mallocs(), "frees", counts.program_frees(),
              "failures", counts.program_failures())


if __name__ == "__main__":
    main()
    sys.stdout.flush()
