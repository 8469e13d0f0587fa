/*
 * xor_device.h: the fake "GPU" backend of the framework's white-box tests (test_fake_backend.c,
 * test_fake_ckpt.c): one device GPU:0 whose memory is host memory XOR-scrambled byte by byte,
 * so any direct read or write by the framework gives wrong values; only its copy slots (and
 * the test's own kernels) unscramble. Each block is preceded by HEAD bytes holding its size,
 * starts as FAKE_FILL garbage, and the device has FAKE_BUDGET bytes in all (raw_alloc gives
 * NULL past it). The slots count their calls in `fake` (a test may have globals; the library
 * may not).
 *
 * The including test defines KEY, FAKE_BUDGET and FAKE_FILL before the include, and after it
 * fake_device_setup(dev), which gives a new device record its device table (FAKE_OPS_BASE and
 * the slots it wants), kernels and optimizer kernels. This header gives the backend record and
 * the test build's registration list (tfl__backends: the library's CPU, then the fake), which
 * the linker takes instead of the static library's backends.c.
 */
#ifndef TFL_XOR_DEVICE_H
#define TFL_XOR_DEVICE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define HEAD 64 /* bytes before each block: its size (keeps TFL_ALIGN) */

/* What the fake device counts: the union of what the tests that use it read. */
static struct {
    int64_t live_bytes;     /* raw memory not yet freed */
    int to_host, to_device; /* copy_host calls, by direction */
    int syncs, apply_calls, sumsq_calls, kernel_calls;
} fake;

/* Defined by the including test: a new device record's tables and kernels. */
static void fake_device_setup(tfl__device *dev);

static inline void scramble(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (size_t i = 0; i < n; i++)
        d[i] = (unsigned char)(s[i] ^ KEY);
}

static inline void *fake_raw_alloc(tfl__device *dev, size_t bytes)
{
    if (fake.live_bytes + (int64_t)bytes > (int64_t)FAKE_BUDGET) return NULL;
    char *p = tfl__host_alloc(dev->ctx, bytes + HEAD, TFL_ALIGN);
    if (!p) return NULL;
    memcpy(p, &bytes, sizeof bytes);
    memset(p + HEAD, FAKE_FILL, bytes); /* garbage, as fresh device memory is */
    fake.live_bytes += (int64_t)bytes;
    return p + HEAD;
}

static inline void fake_raw_free(tfl__device *dev, void *ptr)
{
    char *p = (char *)ptr - HEAD;
    size_t bytes;
    memcpy(&bytes, p, sizeof bytes);
    fake.live_bytes -= (int64_t)bytes;
    tfl__host_free(dev->ctx, p);
}

static inline tfl_status fake_copy_host(tfl__device *dev, void *dst, const void *src, size_t bytes,
                                        int to_host)
{
    (void)dev;
    if (to_host)
        fake.to_host++;
    else
        fake.to_device++;
    scramble(dst, src, bytes);
    return TFL_OK;
}

static inline tfl_status fake_sync(tfl__device *dev)
{
    (void)dev;
    fake.syncs++;
    return TFL_OK;
}

static inline tfl_status fake_mem_info(tfl__device *dev, size_t *free_bytes, size_t *total_bytes)
{
    (void)dev;
    *free_bytes = FAKE_BUDGET - (size_t)fake.live_bytes;
    *total_bytes = FAKE_BUDGET;
    return TFL_OK;
}

/* The first fields of the including test's tfl__device_ops initializer. Flags 0: its memory
 * is not the host's. */
/* clang-format off */
#define FAKE_OPS_BASE                                                                              \
    .version = TFL_DEVICE_OPS_VERSION, .type_name = "GPU", .priority = 10, .flags = 0,             \
    .raw_alloc = fake_raw_alloc, .raw_free = fake_raw_free, .copy_host = fake_copy_host
/* clang-format on */

static int fake_device_count(tfl_ctx *ctx)
{
    (void)ctx;
    return 1;
}

static tfl__device *fake_device_new(tfl_ctx *ctx, int index)
{
    tfl__device *dev = tfl__calloc(ctx, sizeof *dev);
    if (!dev) return NULL;
    dev->ctx = ctx;
    dev->index = index;
    snprintf(dev->name, sizeof dev->name, "GPU:%d", index);
    fake_device_setup(dev);
    return dev;
}

static const tfl__backend fake_backend = {
    .version = TFL_DEVICE_OPS_VERSION,
    .type_name = "GPU",
    .device_count = fake_device_count,
    .device_new = fake_device_new,
};

/* The registration list of this test build: the library's CPU, then the fake. */
extern const tfl__backend tfl__cpu_backend;
const tfl__backend *const tfl__backends[] = {&tfl__cpu_backend, &fake_backend};
const int tfl__n_backends = 2;

#endif
