/*
 * framework/cpu/cpu_device.c: the CPU backend (tfl__cpu_backend, one device CPU:0): host
 * memory (64-byte aligned, through the context's allocation hooks), the kernel table merged
 * from the op families, and the optimizer kernels. Every optional slot of the device table is
 * implemented, synchronously: the CPU has one implicit stream, and its events are no-ops.
 */
#include "cpu.h"
#include "kernels.h"
#include "opt_kernels.h"

#include <stdio.h>

static void *cpu_raw_alloc(tfl__device *dev, size_t bytes)
{
    return tfl__host_alloc(dev->ctx, bytes, TFL_ALIGN);
}

static void cpu_raw_free(tfl__device *dev, void *ptr) { tfl__host_free(dev->ctx, ptr); }

static tfl_status cpu_copy_host(tfl__device *dev, void *dst, const void *src, size_t bytes,
                                int to_host)
{
    (void)dev;
    (void)to_host;
    memcpy(dst, src, bytes);
    return TFL_OK;
}

static tfl_status cpu_copy_device(tfl__device *dev, tfl__stream *stream, void *dst,
                                  const void *src, size_t bytes)
{
    (void)dev;
    (void)stream;
    memcpy(dst, src, bytes);
    return TFL_OK;
}

static tfl_status cpu_copy_host_async(tfl__device *dev, tfl__stream *stream, void *dst,
                                      const void *src, size_t bytes, int to_host)
{
    (void)stream;
    return cpu_copy_host(dev, dst, src, bytes, to_host);
}

static tfl_status cpu_memset(tfl__device *dev, tfl__stream *stream, void *dst, int value,
                             size_t bytes)
{
    (void)dev;
    (void)stream;
    memset(dst, value, bytes);
    return TFL_OK;
}

/* The CPU's work is done when its calls return: one implicit stream, whose handle is NULL,
 * and events that mark nothing (non-NULL handles, so callers can tell them from failures). */
static tfl_status cpu_stream_new(tfl__device *dev, tfl__stream **out)
{
    (void)dev;
    *out = NULL;
    return TFL_OK;
}

static void cpu_stream_free(tfl__device *dev, tfl__stream *stream)
{
    (void)dev;
    (void)stream;
}

static tfl_status cpu_stream_sync(tfl__device *dev, tfl__stream *stream)
{
    (void)dev;
    (void)stream;
    return TFL_OK;
}

static const char cpu_event_mark; /* every CPU event is this address */

static tfl_status cpu_event_new(tfl__device *dev, tfl__event **out)
{
    (void)dev;
    *out = (tfl__event *)(uintptr_t)&cpu_event_mark;
    return TFL_OK;
}

static void cpu_event_free(tfl__device *dev, tfl__event *event)
{
    (void)dev;
    (void)event;
}

static tfl_status cpu_event_record(tfl__device *dev, tfl__event *event, tfl__stream *stream)
{
    (void)dev;
    (void)event;
    (void)stream;
    return TFL_OK;
}

static tfl_status cpu_event_wait(tfl__device *dev, tfl__stream *stream, tfl__event *event)
{
    (void)dev;
    (void)stream;
    (void)event;
    return TFL_OK;
}

static tfl_status cpu_event_sync(tfl__device *dev, tfl__event *event)
{
    (void)dev;
    (void)event;
    return TFL_OK;
}

static const tfl__device_ops cpu_ops = {
    .version = TFL_DEVICE_OPS_VERSION,
    .type_name = "CPU",
    .priority = 0,
    .flags = TFL_DEVICE_HOST_MEMORY,
    .raw_alloc = cpu_raw_alloc,
    .raw_free = cpu_raw_free,
    .copy_host = cpu_copy_host,
    .sync = NULL,
    .copy_device = cpu_copy_device,
    .copy_host_async = cpu_copy_host_async,
    .memset = cpu_memset,
    .stream_new = cpu_stream_new,
    .stream_free = cpu_stream_free,
    .stream_sync = cpu_stream_sync,
    .event_new = cpu_event_new,
    .event_free = cpu_event_free,
    .event_record = cpu_event_record,
    .event_wait = cpu_event_wait,
    .event_sync = cpu_event_sync,
    .mem_info = NULL,
    .describe = NULL,
};

static const tfl__kernel *const families[] = {
    tfl__cpu_elementwise_kernels,
    tfl__cpu_reduce_kernels,
    tfl__cpu_matmul_kernels,
    tfl__cpu_shape_kernels,
    tfl__cpu_loss_kernels,
    tfl__cpu_norm_kernels,
    tfl__cpu_conv_kernels,
    tfl__cpu_pool_kernels,
};

static int cpu_device_count(tfl_ctx *ctx)
{
    (void)ctx;
    return 1;
}

static tfl__device *cpu_device_new(tfl_ctx *ctx, int index)
{
    size_t head = (sizeof(tfl__cpu_device) + 63) / 64 * 64;
    tfl__cpu_device *cpu = tfl__host_alloc(ctx, head + tfl__cpu_gemm_bytes(), 64);
    if (!cpu) {
        tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "tfl_ctx_new: out of memory for CPU:0");
        return NULL;
    }
    memset(cpu, 0, sizeof *cpu);
    if (tfl__cpu_gemm_init((char *)cpu + head)) cpu->gemm = (char *)cpu + head;
    tfl__device *dev = &cpu->base;
    dev->ops = &cpu_ops;
    dev->ctx = ctx;
    dev->index = index;
    snprintf(dev->name, sizeof dev->name, "CPU:%d", index);
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (int op = 0; op < TFL_OP_COUNT; op++)
            if (families[f][op].fn) dev->kernels[op] = families[f][op];
    dev->opt_kernels = &tfl__cpu_opt_kernels;
    return dev;
}

const tfl__backend tfl__cpu_backend = {
    .version = TFL_DEVICE_OPS_VERSION,
    .type_name = "CPU",
    .device_count = cpu_device_count,
    .device_new = cpu_device_new,
    .device_free = NULL,
};
