/*
 * tests/common/fake_gpu_module.c: libtfl_fake_gpu.so, a backend module (framework/
 * backend_module.h) that gives every context a GPU:0 made of host memory, so the whole suite
 * runs with a GPU present on a machine without one: `make test TFL_TEST_FAKE_GPU=1` sets
 * TFL_GPU_MODULE to this file for ctest, and libtapeflow loads it as it loads
 * libtapeflow_cuda.so.
 *
 * The device behaves as the CUDA backend does where the framework can tell: it has the
 * highest priority and optimizer kernels (variables go to GPU:0 and ops run there), its
 * memory is not the host's (flags 0: the framework reaches it only through the slots), its
 * memory and its pinned host buffers come from outside the context's allocation hooks (as
 * cudaMalloc and cudaHostAlloc do), it has its own streams and events, and its optimizer
 * table clips by norm on the device (sumsq_device, clip_scales_device), as CUDA's does. The
 * kernels are the CPU backend's (its memory is host memory underneath), so results equal
 * CPU:0's.
 */
#include "backend_module.h"
#include "opt_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_TOTAL_BYTES ((size_t)16 << 30) /* what mem_info reports as the device's size */

static void *fake_raw_alloc(tfl__device *dev, size_t bytes)
{
    void *p = NULL;
    (void)dev;
    if (posix_memalign(&p, TFL_ALIGN, bytes ? bytes : 1) != 0) return NULL;
    /* fresh device memory holds garbage: a kernel that reads what it never wrote shows */
    memset(p, 0xA5, bytes);
    return p;
}

static void fake_raw_free(tfl__device *dev, void *ptr)
{
    (void)dev;
    free(ptr);
}

static tfl_status fake_copy_host(tfl__device *dev, void *dst, const void *src, size_t bytes,
                                 int to_host)
{
    (void)dev;
    (void)to_host;
    memmove(dst, src, bytes);
    return TFL_OK;
}

static tfl_status fake_sync(tfl__device *dev)
{
    (void)dev;
    return TFL_OK;
}

static tfl_status fake_copy_device(tfl__device *dev, tfl__stream *stream, void *dst,
                                   const void *src, size_t bytes)
{
    (void)dev;
    (void)stream;
    memmove(dst, src, bytes);
    return TFL_OK;
}

static tfl_status fake_copy_host_async(tfl__device *dev, tfl__stream *stream, void *dst,
                                       const void *src, size_t bytes, int to_host)
{
    (void)stream;
    return fake_copy_host(dev, dst, src, bytes, to_host);
}

static tfl_status fake_memset(tfl__device *dev, tfl__stream *stream, void *dst, int value,
                              size_t bytes)
{
    (void)dev;
    (void)stream;
    memset(dst, value, bytes);
    return TFL_OK;
}

/* Streams and events are real handles (malloc'd tokens), as CUDA's are; the work they order
 * is done when its call returns. */
static tfl_status fake_stream_new(tfl__device *dev, tfl__stream **out)
{
    *out = malloc(16);
    return *out ? TFL_OK
                : tfl__set_error(dev->ctx, TFL_RESOURCE_EXHAUSTED, "stream_new on %s: out of "
                                 "memory", dev->name);
}

static void fake_stream_free(tfl__device *dev, tfl__stream *stream)
{
    (void)dev;
    free(stream);
}

static tfl_status fake_stream_sync(tfl__device *dev, tfl__stream *stream)
{
    (void)dev;
    (void)stream;
    return TFL_OK;
}

static tfl_status fake_event_new(tfl__device *dev, tfl__event **out)
{
    *out = malloc(16);
    return *out ? TFL_OK
                : tfl__set_error(dev->ctx, TFL_RESOURCE_EXHAUSTED, "event_new on %s: out of "
                                 "memory", dev->name);
}

static void fake_event_free(tfl__device *dev, tfl__event *event)
{
    (void)dev;
    free(event);
}

static tfl_status fake_event_record(tfl__device *dev, tfl__event *event, tfl__stream *stream)
{
    (void)dev;
    (void)event;
    (void)stream;
    return TFL_OK;
}

static tfl_status fake_event_wait(tfl__device *dev, tfl__stream *stream, tfl__event *event)
{
    (void)dev;
    (void)stream;
    (void)event;
    return TFL_OK;
}

static tfl_status fake_event_sync(tfl__device *dev, tfl__event *event)
{
    (void)dev;
    (void)event;
    return TFL_OK;
}

static tfl_status fake_mem_info(tfl__device *dev, size_t *free_bytes, size_t *total_bytes)
{
    (void)dev;
    *total_bytes = FAKE_TOTAL_BYTES;
    *free_bytes = FAKE_TOTAL_BYTES; /* the figures for messages; the fake does not count */
    return TFL_OK;
}

static void fake_describe(tfl__device *dev, char *buf, size_t size)
{
    (void)dev;
    snprintf(buf, size, "fake GPU on host memory (test module)");
}

/* pinned host memory, outside the context's hooks as cudaHostAlloc is */
static void *fake_host_alloc(tfl__device *dev, size_t bytes)
{
    (void)dev;
    void *p = NULL;
    return posix_memalign(&p, TFL_ALIGN, bytes ? bytes : 1) == 0 ? p : NULL;
}

static void fake_host_free(tfl__device *dev, void *ptr)
{
    (void)dev;
    free(ptr);
}

/* Graphs, as CUDA's behave where the framework can tell: capture records the work without
 * running it (here: the function that issues it), and each launch runs it all again. */
typedef struct fake_graph {
    tfl_status (*issue)(void *arg);
    void *arg;
} fake_graph;

static tfl_status fake_graph_capture(tfl__device *dev, tfl_status (*issue)(void *arg), void *arg,
                                     void **graph)
{
    fake_graph *g = malloc(sizeof *g);
    if (!g)
        return tfl__set_error(dev->ctx, TFL_RESOURCE_EXHAUSTED, "graph_capture on %s: out of "
                              "memory", dev->name);
    g->issue = issue;
    g->arg = arg;
    *graph = g;
    return TFL_OK;
}

static tfl_status fake_graph_launch(tfl__device *dev, void *graph)
{
    (void)dev;
    fake_graph *g = graph;
    return g->issue(g->arg);
}

static void fake_graph_free(tfl__device *dev, void *graph)
{
    (void)dev;
    free(graph);
}

static const tfl__device_ops fake_ops = {
    .version = TFL_DEVICE_OPS_VERSION,
    .type_name = "GPU",
    .priority = 10,
    .flags = 0,
    .raw_alloc = fake_raw_alloc,
    .raw_free = fake_raw_free,
    .copy_host = fake_copy_host,
    .sync = fake_sync,
    .copy_device = fake_copy_device,
    .copy_host_async = fake_copy_host_async,
    .memset = fake_memset,
    .stream_new = fake_stream_new,
    .stream_free = fake_stream_free,
    .stream_sync = fake_stream_sync,
    .event_new = fake_event_new,
    .event_free = fake_event_free,
    .event_record = fake_event_record,
    .event_wait = fake_event_wait,
    .event_sync = fake_event_sync,
    .mem_info = fake_mem_info,
    .describe = fake_describe,
    .host_alloc = fake_host_alloc,
    .host_free = fake_host_free,
    .graph_capture = fake_graph_capture,
    .graph_launch = fake_graph_launch,
    .graph_free = fake_graph_free,
};

/* The CPU backend: its device_new makes GPU:N's record (kernels, optimizer kernels, GEMM
 * state), which the fake renames and gives its own table. */
static const tfl__backend *cpu_backend;
static const tfl__opt_kernels *cpu_opt; /* its optimizer table, from the first device */

/* The CPU's optimizer table plus clipping on the device: the sums stay in device memory
 * (host memory here) and become scales there; the update kernels read them by gscale_at.
 * Filled by the entry (the same values at every call). */
static tfl__opt_kernels fake_opt;

static tfl_status fake_sumsq_device(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                                    const tfl__opt_tensor *t, double *sums)
{
    return cpu_opt->sumsq(ctx, dev, dtype, n, t, sums);
}

static tfl_status fake_clip_scales_device(tfl_ctx *ctx, tfl__device *dev, int n, double *sums,
                                          const struct tfl__opt_clip *clip)
{
    (void)ctx;
    (void)dev;
    tfl__opt_clip_scales(clip, n, sums, sums);
    return TFL_OK;
}

static int fake_count(tfl_ctx *ctx)
{
    (void)ctx;
    return 1;
}

static tfl__device *fake_new(tfl_ctx *ctx, int index)
{
    tfl__device *dev = cpu_backend->device_new(ctx, index);
    if (!dev) return NULL;
    dev->ops = &fake_ops;
    if (dev->opt_kernels) {
        cpu_opt = dev->opt_kernels;
        fake_opt = *dev->opt_kernels;
        fake_opt.sumsq_device = fake_sumsq_device;
        fake_opt.clip_scales_device = fake_clip_scales_device;
        dev->opt_kernels = &fake_opt;
    }
    snprintf(dev->name, sizeof dev->name, "GPU:%d", index);
    return dev;
}

static void fake_free(tfl__device *dev)
{
    if (cpu_backend->device_free)
        cpu_backend->device_free(dev);
    else
        tfl__host_free(dev->ctx, dev);
}

static const tfl__backend fake_backend = {
    .version = TFL_DEVICE_OPS_VERSION,
    .type_name = "GPU",
    .device_count = fake_count,
    .device_new = fake_new,
    .device_free = fake_free,
};

__attribute__((visibility("default"))) const tfl__backend *
tfl_backend_module_v1(const tfl__module_host *host, char *why, size_t size);

const tfl__backend *tfl_backend_module_v1(const tfl__module_host *host, char *why, size_t size)
{
    if (!tfl__module_accept(host, why, size)) return NULL;
    cpu_backend = host->cpu;
    return &fake_backend;
}
