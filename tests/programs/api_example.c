/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/*
 * The README's example of the public API, in C, linked with -lgdrhook (not
 * preloaded): a communication library asks gdrhook for the registration of
 * a buffer instead of keeping its own cache. Built and run by the tests.
 */
#include <cuda.h>
#include <gdrhook.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr buf;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuMemAlloc(&buf, 4 << 20))
        return 2;

    gdrhook_registration reg;
    int rc = gdrhook_get((void *)(buf + 4096), 65536, &reg);
    if (rc != 0) {
        fprintf(stderr, "gdrhook_get: %s\n", strerror(-rc));
        return 1;
    }
    /* With GDRHOOK_REG_DMABUF: ibv_reg_dmabuf_mr(pd, reg.dmabuf_offset, 65536,
     * buf + 4096, reg.dmabuf_fd, access) registers it with the NIC. */
    printf("registered %llu bytes at offset %llu of a %s pin\n", (unsigned long long)reg.length,
           (unsigned long long)reg.dmabuf_offset,
           reg.kind == GDRHOOK_REG_DMABUF ? "dma-buf"
           : reg.kind == GDRHOOK_REG_KMOD ? "kmod"
                                          : "none");
    gdrhook_put(&reg);

    cuMemFree(buf); /* gdrhook drops the registration and unpins it */
    gdrhook_stats stats;
    gdrhook_get_stats(&stats, sizeof(stats));
    printf("pins %llu, invalidated by frees %llu\n", (unsigned long long)stats.pins,
           (unsigned long long)stats.invalidated);
    return 0;
}
