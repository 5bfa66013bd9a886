/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/*
 * gdrhook.h - the public C API of libgdrhook.
 *
 * A communication library asks gdrhook for the GPUDirect registration of a
 * buffer instead of keeping its own cache: gdrhook_get() returns the pinned
 * range covering the buffer (pinning it on the first request) and keeps it
 * valid until gdrhook_put(), even if the application frees the memory in
 * between. gdrhook sees every free, so a registration it returns is never
 * stale, and a hit costs a few nanoseconds with no driver call.
 *
 * Works whether libgdrhook.so is preloaded (LD_PRELOAD) or linked. Every
 * function returns 0 or a negative errno and never throws.
 *
 *   gdrhook_registration reg;
 *   if (gdrhook_get(buf, len, &reg) == 0) {
 *       if (reg.kind == GDRHOOK_REG_DMABUF)
 *           mr = ibv_reg_dmabuf_mr(pd, reg.dmabuf_offset, len,
 *                                  (uintptr_t)buf, reg.dmabuf_fd, access);
 *       ...
 *       gdrhook_put(&reg);
 *   }
 */
#ifndef GDRHOOK_H
#define GDRHOOK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GDRHOOK_API __attribute__((visibility("default")))

/* Bumped when a structure below grows or a function is added. */
#define GDRHOOK_API_VERSION 1

/* What pins a registration (GDRHOOK_BACKEND picks it). */
enum gdrhook_registration_kind {
    GDRHOOK_REG_NONE = 0,   /* tracked, not pinned (GDRHOOK_BACKEND=none) */
    GDRHOOK_REG_DMABUF = 1, /* a dma-buf fd exported by the CUDA driver */
    GDRHOOK_REG_KMOD = 2,   /* a gdrhook.ko handle on /dev/gdrhook */
};

typedef struct gdrhook_registration {
    uint64_t base;          /* first byte of the pinned range, in the address asked with */
    uint64_t length;        /* bytes pinned: the whole allocation where known */
    int32_t kind;           /* enum gdrhook_registration_kind */
    int32_t dmabuf_fd;      /* GDRHOOK_REG_DMABUF: the fd; owned by gdrhook, do not close */
    uint64_t dmabuf_offset; /* the requested address's offset in the dma-buf */
    uint64_t kmod_handle;   /* GDRHOOK_REG_KMOD: the handle, else 0 */
    uint64_t buffer_id;     /* CU_POINTER_ATTRIBUTE_BUFFER_ID at pin time, 0 if unknown */
    uint64_t opaque[3];     /* for gdrhook_put(); do not touch */
} gdrhook_registration;

/*
 * The registration covering [ptr, ptr + length), pinned now if it was not.
 * Valid until gdrhook_put(), which may be called from any thread.
 * Returns 0, -ENODEV (gdrhook inactive), -EOPNOTSUPP (managed memory),
 * -ENOSPC (no BAR space left after eviction), -EINVAL or -EIO.
 */
GDRHOOK_API int gdrhook_get(const void *ptr, size_t length, gdrhook_registration *out);

/* Releases a registration from gdrhook_get(). Returns 0 or -EINVAL. */
GDRHOOK_API int gdrhook_put(gdrhook_registration *registration);

typedef struct gdrhook_stats {
    uint64_t hits;
    uint64_t misses;
    uint64_t pins;
    uint64_t pin_failures;
    uint64_t unpins;
    uint64_t evictions;
    uint64_t invalidated;  /* registrations ended by a free */
    uint64_t entries;      /* registrations cached now */
    uint64_t bytes_pinned; /* now */
    uint64_t peak_bytes_pinned;
    uint64_t verify_checks;     /* GDRHOOK_VERIFY=1 */
    uint64_t verify_mismatches; /* stale hits caught; must be 0 */
} gdrhook_stats;

/*
 * Fills at most `size` bytes of *out (pass sizeof(gdrhook_stats); an older
 * caller's smaller struct gets its prefix). Returns 0 or -ENODEV/-EINVAL.
 */
GDRHOOK_API int gdrhook_get_stats(gdrhook_stats *out, size_t size);

/* GDRHOOK_API_VERSION of the library loaded. */
GDRHOOK_API uint32_t gdrhook_api_version(void);

#ifdef __cplusplus
}
#endif

#endif /* GDRHOOK_H */
