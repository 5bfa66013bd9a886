// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A runtime-API program, built twice on the GPU machine: with nvcc's
// default static cudart and with -cudart shared. It counts the
// deallocations it makes and prints "frees_made=N" and a checksum: device
// and host memory, stream-ordered frees to the default pool and to a pool
// of its own, trimmed with cudaMemPoolTrimTo and destroyed.
#include "runtime_program.h"

#include <cstdint>

__global__ void fill(float *data, int n, float value)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] = value + i;
}

int main()
{
    const int n = 1 << 18;
    CHECK(cudaFree(nullptr)); // initialize the runtime outside the window
    const long long used_at_start = used_bytes();
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

    // A pool of its own that keeps what is freed to it (release threshold
    // at the maximum) until cudaMemPoolTrimTo gives it back. Each
    // cudaFreeAsync is a cuMemFreeAsync free event; the trim and the
    // pool's destruction are one free event each (cuMemPoolTrimTo,
    // cuMemPoolDestroy: the README's log schema), whatever they release.
    cudaMemPool_t pool;
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CHECK(cudaMemPoolCreate(&pool, &props));
    uint64_t keep_all = ~0ull;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
    for (int i = 0; i < 10; ++i) {
        float *d;
        const int count = n * (1 + i % 4);
        CHECK(cudaMallocFromPoolAsync(&d, count * sizeof(float), pool, stream));
        fill<<<(count + 255) / 256, 256, 0, stream>>>(d, count, 2.0f);
        CHECK(cudaMemcpyAsync(host, d + count - 1, sizeof(float), cudaMemcpyDeviceToHost, stream));
        CHECK(cudaStreamSynchronize(stream));
        checksum += host[0];
        FREE(cudaFreeAsync(d, stream));
    }
    CHECK(cudaStreamSynchronize(stream));
    uint64_t reserved_before = 0, reserved_after = 0;
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved_before));
    FREE(cudaMemPoolTrimTo(pool, 0));
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved_after));
    fprintf(stderr, "note pool reserved %llu before the trim, %llu after\n",
            static_cast<unsigned long long>(reserved_before),
            static_cast<unsigned long long>(reserved_after));
    FREE(cudaMemPoolDestroy(pool));
    CHECK(cudaStreamDestroy(stream));
    FREE(cudaFreeHost(host));
    mark();

    printf("checksum=%.1f\n", checksum);
    printf("frees_made=%d\n", frees_made);
    report_used_delta(used_at_start, used_bytes);
    fprintf(stderr, "expect pool_trims=1\n");
    return 0;
}
