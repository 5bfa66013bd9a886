// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A runtime-API program, built twice on the GPU machine: with nvcc's
// default static cudart and with -cudart shared. It counts the
// deallocations it makes and prints "frees_made=N" and a checksum.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

static int frees_made = 0;

#define CHECK(call)                                                           \
    do {                                                                      \
        cudaError_t rc_ = (call);                                             \
        if (rc_ != cudaSuccess) {                                             \
            fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(rc_)); \
            exit(1);                                                          \
        }                                                                     \
    } while (0)
#define FREE(call)                                                            \
    do {                                                                      \
        CHECK(call);                                                          \
        ++frees_made;                                                         \
    } while (0)

__global__ void fill(float *data, int n, float value)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] = value + i;
}

// Brackets the counted part (see tests/gpu/marker.py): an allocation of a
// size nobody else uses, freed at once. The runtime's own frees at start-up
// and exit fall outside.
static void mark()
{
    void *p = nullptr;
    CHECK(cudaMalloc(&p, 3 * 1024 * 1024 + 7 * 4096));
    CHECK(cudaFree(p));
}

int main()
{
    const int n = 1 << 18;
    CHECK(cudaFree(nullptr)); // initialize the runtime outside the window
    mark();
    double checksum = 0;
    float *host = nullptr;
    CHECK(cudaMallocHost(&host, n * sizeof(float)));
    for (int i = 0; i < 100; ++i) {
        float *d;
        CHECK(cudaMalloc(&d, n * sizeof(float)));
        fill<<<(n + 255) / 256, 256>>>(d, n, static_cast<float>(i));
        CHECK(cudaMemcpy(host, d, n * sizeof(float), cudaMemcpyDeviceToHost));
        checksum += host[n - 1];
        FREE(cudaFree(d));
    }
    CHECK(cudaFree(nullptr)); // not a deallocation

    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    for (int i = 0; i < 10; ++i) {
        float *d;
        CHECK(cudaMallocAsync(&d, n * sizeof(float), stream));
        fill<<<(n + 255) / 256, 256, 0, stream>>>(d, n, 1.0f);
        FREE(cudaFreeAsync(d, stream));
    }
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaStreamDestroy(stream));
    FREE(cudaFreeHost(host));
    mark();

    printf("checksum=%.1f\n", checksum);
    printf("frees_made=%d\n", frees_made);
    return 0;
}
