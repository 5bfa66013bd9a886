// SPDX-License-Identifier: GPL-2.0-only OR MIT
//
// fake_free_revokes - runs in the VM guest, linked against the fake driver:
// checks that the fake driver's memory is what gdrhook.ko's nv-p2p PIN
// accepts over the test provider (64 KiB aligned process pages), and that
// the fake's cuMemFree fires the provider's free callbacks the way
// nvidia.ko does: a pin still held when the memory is freed is revoked (one
// event, QUERY says revoked, the handle stays until UNPIN), and a pin
// released before the free sees nothing. Exit status 0: all held.
#include <cuda.h>

#include "gdrhook_ioctl.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fake_free_revokes: %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static uint64_t pin(int dev, CUdeviceptr p, size_t size)
{
    gdrhook_ioc_pin request{};
    request.backend = GDRHOOK_BACKEND_NVP2P;
    request.addr = p;
    request.length = size;
    request.dmabuf_fd = -1;
    EXPECT(ioctl(dev, GDRHOOK_IOCTL_PIN, &request) == 0);
    return request.handle;
}

static uint32_t state(int dev, uint64_t handle)
{
    gdrhook_ioc_query query{};
    query.handle = handle;
    EXPECT(ioctl(dev, GDRHOOK_IOCTL_QUERY, &query) == 0);
    return query.state;
}

static void unpin(int dev, uint64_t handle)
{
    gdrhook_ioc_unpin request{handle};
    EXPECT(ioctl(dev, GDRHOOK_IOCTL_UNPIN, &request) == 0);
}

int main()
{
    EXPECT(cuInit(0) == CUDA_SUCCESS);
    CUdevice device;
    CUcontext context;
    EXPECT(cuDeviceGet(&device, 0) == CUDA_SUCCESS);
    EXPECT(cuDevicePrimaryCtxRetain(&context, device) == CUDA_SUCCESS);
    EXPECT(cuCtxSetCurrent(context) == CUDA_SUCCESS);
    const int dev = open(GDRHOOK_DEVICE_PATH, O_RDWR | O_CLOEXEC | O_NONBLOCK);
    EXPECT(dev >= 0);
    const size_t size = (1 << 20) + 4096; // the pin covers whole 64 KiB pages

    // Held across the free: revoked by the free's callback.
    CUdeviceptr p;
    EXPECT(cuMemAlloc(&p, size) == CUDA_SUCCESS);
    EXPECT(p % GDRHOOK_NVP2P_ALIGN == 0);
    const size_t pinned = (size + GDRHOOK_NVP2P_ALIGN - 1) & ~(GDRHOOK_NVP2P_ALIGN - 1);
    const uint64_t held = pin(dev, p, pinned);
    gdrhook_event event;
    EXPECT(read(dev, &event, sizeof(event)) < 0 && errno == EAGAIN);
    EXPECT(cuMemFree(p) == CUDA_SUCCESS);
    EXPECT(read(dev, &event, sizeof(event)) == sizeof(event));
    EXPECT(event.type == GDRHOOK_EVENT_REVOKED_NVP2P && event.handle == held);
    EXPECT(event.addr == p && event.length == pinned);
    EXPECT(state(dev, held) == GDRHOOK_STATE_REVOKED);
    unpin(dev, held);

    // Released before the free: the free finds nothing to revoke. The same
    // address comes back (VA reuse) and pins again.
    CUdeviceptr q;
    EXPECT(cuMemAlloc(&q, size) == CUDA_SUCCESS);
    EXPECT(q == p);
    unpin(dev, pin(dev, q, pinned));
    EXPECT(cuMemFree(q) == CUDA_SUCCESS);
    EXPECT(read(dev, &event, sizeof(event)) < 0 && errno == EAGAIN);

    close(dev);
    EXPECT(cuDevicePrimaryCtxRelease(device) == CUDA_SUCCESS);
    printf(
        "fake_free_revokes: the fake driver's cuMemFree revoked the pin it freed, and only it\n");
    return 0;
}
