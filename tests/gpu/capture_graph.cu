// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Stream capture on a GPU,
// for tests/gpu/run.sh (run plain and under GDRHOOK_PIN=alloc):
//   capture_graph graph         captures in global mode (PyTorch's default)
//                               a cudaMallocAsync, a kernel and a
//                               cudaFreeAsync, launches the graph 200 times,
//                               destroys it and trims the graph memory
// (A stream-ordered pool and compressible memory: tests/programs/capture.cpp's
// pool_lookup and compressible modes.)
// Prints the checksum it computed and frees_made=N on stdout (the free
// calls made, each a `free` event: a cudaFreeAsync captured in a graph is
// one call), mem_used_delta=N on stderr.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "used_delta.h"

#define CHECK_RT(call)                                                                             \
    do {                                                                                           \
        cudaError_t rc_ = (call);                                                                  \
        if (rc_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "%s failed: %d\n", #call, int(rc_));                                   \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)
#define CHECK_CU(call)                                                                             \
    do {                                                                                           \
        CUresult rc_ = (call);                                                                     \
        if (rc_ != CUDA_SUCCESS) {                                                                 \
            fprintf(stderr, "%s failed: %d\n", #call, int(rc_));                                   \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

__global__ void fill_and_add(int *scratch, unsigned long long *sum, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        scratch[i] = i % 7;
        atomicAdd(sum, static_cast<unsigned long long>(scratch[i]));
    }
}

static long long used_bytes()
{
    size_t free_b = 0, total = 0;
    cudaMemGetInfo(&free_b, &total);
    return static_cast<long long>(total - free_b);
}

static int graph_mode()
{
    const int n = 1 << 20, launches = 200;
    cudaStream_t stream;
    CHECK_RT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    unsigned long long *sum = nullptr;
    CHECK_RT(cudaMalloc(&sum, sizeof(*sum)));
    CHECK_RT(cudaMemset(sum, 0, sizeof(*sum)));
    cudaGraph_t graph;
    CHECK_RT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    int *scratch = nullptr;
    CHECK_RT(cudaMallocAsync(&scratch, n * sizeof(int), stream));
    fill_and_add<<<(n + 255) / 256, 256, 0, stream>>>(scratch, sum, n);
    CHECK_RT(cudaFreeAsync(scratch, stream));
    CHECK_RT(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec;
    CHECK_RT(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < launches; ++i)
        CHECK_RT(cudaGraphLaunch(exec, stream));
    CHECK_RT(cudaStreamSynchronize(stream));
    unsigned long long host = 0;
    CHECK_RT(cudaMemcpy(&host, sum, sizeof(host), cudaMemcpyDeviceToHost));
    CHECK_RT(cudaGraphExecDestroy(exec));
    CHECK_RT(cudaGraphDestroy(graph));
    CHECK_RT(cudaDeviceGraphMemTrim(0));
    CHECK_RT(cudaFree(sum));
    CHECK_RT(cudaStreamDestroy(stream));
    // The captured cudaFreeAsync (a free node), the executable graph and the
    // graph (they release the graph memory), the trim, cudaFree.
    printf("checksum=%llu\nfrees_made=5\n", host);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    CHECK_RT(cudaSetDevice(0));
    CHECK_RT(cudaFree(nullptr)); // the primary context, current
    long long at_start = used_bytes();
    int rc = 2;
    if (!strcmp(mode, "graph"))
        rc = graph_mode();
    else
        fprintf(stderr, "usage: capture_graph graph\n");
    if (rc == 0)
        report_used_delta(at_start, used_bytes);
    return rc;
}
