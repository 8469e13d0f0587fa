/*
 * tests/common/host_gpu.h: a counting "GPU:0" test backend for white-box tests (those that
 * link tapeflow_static and tfl_framework_private). Its device record is made by the CPU
 * backend's device_new, so its kernels, optimizer kernels and BLIS contexts are the CPU's and
 * run on its memory, which is host memory; its device table says that memory is not the
 * host's (flags 0), so the framework reaches it only through the slots, which count their
 * calls in dev_count (a test may have globals; the library may not).
 *
 * This header gives the slots every such test needs (raw_alloc, raw_free, copy_host, sync),
 * the backend record and the test build's registration list (tfl__backends: the library's
 * CPU, then this GPU). The including test defines, after the include, the two hooks below:
 * host_gpu_ops() returns its device table, which starts with HOST_GPU_OPS_BASE and may add
 * slots of its own (streams, events, pinned memory); host_gpu_opt_kernels(cpu) returns the
 * optimizer table for the device given the CPU's (cpu itself to keep it). Include after
 * <cmocka.h> and "internal.h" ("opt_kernels.h" for the optimizer table's type).
 */
#ifndef TFL_HOST_GPU_H
#define TFL_HOST_GPU_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* What the device counts: the union of what the tests that use it read. */
typedef struct host_gpu_counts {
    int64_t live_blocks, live_pinned, live_streams, live_events; /* not yet given back */
    int64_t to_host, to_device, async_to_device, async_to_host, syncs;
    int64_t streams, events, records, waits, event_syncs, host_allocs, host_frees;
    int64_t async_from_pinned;               /* async copies whose source is a pinned buffer */
    int64_t host_sumsq, dev_sumsq, dev_clip; /* optimizer kernel calls */
} host_gpu_counts;
static host_gpu_counts dev_count;

/* Defined by the including test: its device table and its optimizer table. */
static const tfl__device_ops *host_gpu_ops(void);
static const tfl__opt_kernels *host_gpu_opt_kernels(const tfl__opt_kernels *cpu);

static void *g_raw_alloc(tfl__device *dev, size_t bytes)
{
    void *p = tfl__host_alloc(dev->ctx, bytes ? bytes : 1, TFL_ALIGN);
    if (p) dev_count.live_blocks++;
    return p;
}

static void g_raw_free(tfl__device *dev, void *ptr)
{
    dev_count.live_blocks--;
    tfl__host_free(dev->ctx, ptr);
}

static tfl_status g_copy_host(tfl__device *dev, void *dst, const void *src, size_t bytes,
                              int to_host)
{
    (void)dev;
    if (to_host)
        dev_count.to_host++;
    else
        dev_count.to_device++;
    memcpy(dst, src, bytes);
    return TFL_OK;
}

static tfl_status g_sync(tfl__device *dev)
{
    (void)dev;
    dev_count.syncs++;
    return TFL_OK;
}

/* The first fields of the including test's tfl__device_ops initializer. Flags 0: the framework
 * must not touch the device's memory directly. */
/* clang-format off */
#define HOST_GPU_OPS_BASE                                                                          \
    .version = TFL_DEVICE_OPS_VERSION, .type_name = "GPU", .priority = 10, .flags = 0,             \
    .raw_alloc = g_raw_alloc, .raw_free = g_raw_free, .copy_host = g_copy_host, .sync = g_sync
/* clang-format on */

extern const tfl__backend tfl__cpu_backend;

static int gpu_count(tfl_ctx *ctx)
{
    (void)ctx;
    return 1;
}

/* The CPU backend's record (its kernels, optimizer kernels and GEMM state), renamed and given
 * the test's tables: the CPU kernels run on it unchanged, since its memory is host memory. */
static tfl__device *gpu_new(tfl_ctx *ctx, int index)
{
    tfl__device *dev = tfl__cpu_backend.device_new(ctx, index);
    if (!dev) return NULL;
    dev->ops = host_gpu_ops();
    dev->opt_kernels = host_gpu_opt_kernels(dev->opt_kernels);
    snprintf(dev->name, sizeof dev->name, "GPU:%d", index);
    return dev;
}

static const tfl__backend gpu_backend = {
    .version = TFL_DEVICE_OPS_VERSION,
    .type_name = "GPU",
    .device_count = gpu_count,
    .device_new = gpu_new,
};

/* The registration list of this test build: the library's CPU, then the counting GPU. */
const tfl__backend *const tfl__backends[] = {&tfl__cpu_backend, &gpu_backend};
const int tfl__n_backends = 2;

#endif
