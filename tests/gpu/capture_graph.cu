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

#include "runtime_program.h" // cuda_checks.h, used_delta.h, used_bytes()

__global__ void fill_and_add(int *scratch, unsigned long long *sum, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        scratch[i] = i % 7;
        atomicAdd(sum, static_cast<unsigned long long>(scratch[i]));
    }
}

static int graph_mode()
{
    const int n = 1 << 20, launches = 200;
    cudaStream_t stream;
    CHECK_CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    unsigned long long *sum = nullptr;
    CHECK_CU(cudaMalloc(&sum, sizeof(*sum)));
    CHECK_CU(cudaMemset(sum, 0, sizeof(*sum)));
    cudaGraph_t graph;
    CHECK_CU(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    int *scratch = nullptr;
    CHECK_CU(cudaMallocAsync(&scratch, n * sizeof(int), stream));
    fill_and_add<<<(n + 255) / 256, 256, 0, stream>>>(scratch, sum, n);
    CHECK_CU(cudaFreeAsync(scratch, stream));
    CHECK_CU(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec;
    CHECK_CU(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < launches; ++i)
        CHECK_CU(cudaGraphLaunch(exec, stream));
    CHECK_CU(cudaStreamSynchronize(stream));
    unsigned long long host = 0;
    CHECK_CU(cudaMemcpy(&host, sum, sizeof(host), cudaMemcpyDeviceToHost));
    CHECK_CU(cudaGraphExecDestroy(exec));
    CHECK_CU(cudaGraphDestroy(graph));
    CHECK_CU(cudaDeviceGraphMemTrim(0));
    CHECK_CU(cudaFree(sum));
    CHECK_CU(cudaStreamDestroy(stream));
    // The captured cudaFreeAsync (a free node), the executable graph and the
    // graph (they release the graph memory), the trim, cudaFree.
    printf("checksum=%llu\nfrees_made=5\n", host);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    CHECK_CU(cudaSetDevice(0));
    CHECK_CU(cudaFree(nullptr)); // the primary context, current
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
