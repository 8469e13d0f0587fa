/*
 * framework/cpu/cpu_device.c: the CPU backend: host memory (64-byte aligned, through the
 * context's allocation hooks) and the kernel table merged from the op families.
 */
#include "cpu.h"
#include "kernels.h"

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

static const tfl__device_ops cpu_ops = {
    .version = TFL_DEVICE_OPS_VERSION,
    .type_name = "CPU",
    .priority = 0,
    .raw_alloc = cpu_raw_alloc,
    .raw_free = cpu_raw_free,
    .copy_host = cpu_copy_host,
    .sync = NULL,
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

tfl__device *tfl__cpu_device_new(tfl_ctx *ctx)
{
    size_t head = (sizeof(tfl__cpu_device) + 63) / 64 * 64;
    tfl__cpu_device *cpu = tfl__host_alloc(ctx, head + tfl__cpu_gemm_bytes(), 64);
    if (!cpu) return NULL;
    memset(cpu, 0, sizeof *cpu);
    if (tfl__cpu_gemm_init((char *)cpu + head)) cpu->gemm = (char *)cpu + head;
    tfl__device *dev = &cpu->base;
    dev->ops = &cpu_ops;
    dev->ctx = ctx;
    dev->index = 0;
    snprintf(dev->name, sizeof dev->name, "CPU:0");
    tfl__allocator_init(&dev->alloc, dev);
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (int op = 0; op < TFL_OP_COUNT; op++)
            if (families[f][op].fn) dev->kernels[op] = families[f][op];
    return dev;
}
