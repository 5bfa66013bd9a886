// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The workload of hot_lines.py: cuMemAlloc+cuMemFree pairs of 1 MiB, the
// last few between two stores to marker variables that the tracer looks
// for. Links the fake driver (any libcuda.so.1 will do).
//
// usage: hot_lines_pairs [WARM_PAIRS]  (prints the markers' addresses)
#include <cuda.h>

#include <cstdio>
#include <cstdlib>

volatile long marker_begin;
volatile long marker_end;

int main(int argc, char **argv)
{
    const int warm = argc > 1 ? atoi(argv[1]) : 30;
    CUdevice device;
    CUcontext context;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS ||
        cuCtxSetCurrent(context) != CUDA_SUCCESS)
        return 1;
    printf("markers %p %p\n", static_cast<void *>(const_cast<long *>(&marker_begin)),
           static_cast<void *>(const_cast<long *>(&marker_end)));
    fflush(stdout);
    for (int i = 0; i < warm + 3; ++i) {
        CUdeviceptr p;
        if (i >= warm)
            marker_begin = i;
        if (cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS)
            return 1;
        if (i >= warm)
            marker_end = i;
    }
    // The tracer needs the mappings as they were during the pairs.
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    while (maps && fgets(line, sizeof line, maps))
        fputs(line, stderr);
    return 0;
}
