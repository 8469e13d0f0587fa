/*
 * framework/cuda/cuda_optim.c: the GPU devices' optimizer kernel table (opt_kernels.h),
 * the host side of k_optim.cu. apply hands the apply's tensors and scalars (opt_elems.h's
 * structs, as optim/ made them) to the multi-tensor launches on the device's stream and returns
 * at once (no sync, no allocation, no copy: the tensor table travels in the kernel
 * parameters). sumsq, whose interface gives the sums to the host in double, reduces
 * on the device into a small device buffer (partial sums per block, then one sum per
 * tensor in a fixed tree) and copies back TFLCU_OPT_SUMSQ_OUT sums at a time: one
 * synchronisation per call for up to that many tensors (tfl_global_norm, and optim/apply.c
 * when the gradients are on several devices). sumsq_device and clip_scales_device keep the
 * sums and the scales on the device for optim/apply.c's clipping: no synchronisation.
 */
#include "cuda_internal.h"
#include "opt_kernels.h"

#define TFLCU_OPT_SUMSQ_OUT 1024 /* sums per copy back to the host */

static tfl_status cu_opt_apply(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                               const tfl__opt_tensor *t, const tfl__opt_hyper *h)
{
    TFL_CHECK(ctx, dtype == TFL_DTYPE_FLOAT32 || dtype == TFL_DTYPE_FLOAT64, TFL_INTERNAL,
              "no %s update kernel on %s for dtype %s", "optimizer", dev->name,
              tfl_dtype_name(dtype));
    return tfl__cuda_check(dev, tflcu_opt_apply((int)dtype, n, t, h, tfl__cuda_stream(dev)),
                           "the optimizer update kernel");
}

/* the device scratch of sumsq: partial sums, then the per-tensor sums (made on first use) */
static double *scratch(tfl__device *dev)
{
    tfl__cuda_device *cu = tfl__cuda(dev);
    if (!cu->opt_scratch) {
        size_t count = (size_t)TFLCU_OPT_CHUNK * TFLCU_OPT_SUMSQ_BLOCKS + TFLCU_OPT_SUMSQ_OUT;
        if (cudaMalloc((void **)&cu->opt_scratch, count * sizeof(double)) != cudaSuccess) {
            (void)cudaGetLastError();
            cu->opt_scratch = NULL;
            tfl__set_error(dev->ctx, TFL_RESOURCE_EXHAUSTED,
                           "out of memory on %s for the gradient norms' scratch (%zu bytes)",
                           dev->name, count * sizeof(double));
        }
    }
    return cu->opt_scratch;
}

static tfl_status cu_opt_sumsq(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                               const tfl__opt_tensor *t, double *out)
{
    TFL_CHECK(ctx, dtype == TFL_DTYPE_FLOAT32 || dtype == TFL_DTYPE_FLOAT64, TFL_INTERNAL,
              "no %s kernel on %s for dtype %s", "sum of squares", dev->name,
              tfl_dtype_name(dtype));
    if (n <= 0) return TFL_OK;
    void *stream = tfl__cuda_stream(dev);
    double *partial = scratch(dev);
    if (!partial) return ctx->err_code;
    double *sums = partial + (size_t)TFLCU_OPT_CHUNK * TFLCU_OPT_SUMSQ_BLOCKS;
    for (int base = 0; base < n; base += TFLCU_OPT_SUMSQ_OUT) {
        int batch = n - base < TFLCU_OPT_SUMSQ_OUT ? n - base : TFLCU_OPT_SUMSQ_OUT;
        for (int done = 0; done < batch; done += TFLCU_OPT_CHUNK) {
            int m = batch - done < TFLCU_OPT_CHUNK ? batch - done : TFLCU_OPT_CHUNK;
            /* the partials are reused by the next chunk in stream order */
            TFL_TRY(tfl__cuda_check(
                dev, tflcu_opt_sumsq((int)dtype, m, t + base + done, partial, sums + done, stream),
                "the sum of squares kernel"));
        }
        /* the one synchronisation: the sums to the host */
        TFL_TRY(dev->ops->copy_host(dev, out + base, sums, (size_t)batch * sizeof(double), 1));
    }
    return TFL_OK;
}

/* sumsq into device memory (sums: n doubles of the device, from its caching allocator):
 * the same kernels, no copy back, no wait */
static tfl_status cu_opt_sumsq_device(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                                      const tfl__opt_tensor *t, double *sums)
{
    TFL_CHECK(ctx, dtype == TFL_DTYPE_FLOAT32 || dtype == TFL_DTYPE_FLOAT64, TFL_INTERNAL,
              "no %s kernel on %s for dtype %s", "sum of squares", dev->name,
              tfl_dtype_name(dtype));
    if (n <= 0) return TFL_OK;
    void *stream = tfl__cuda_stream(dev);
    double *partial = scratch(dev);
    if (!partial) return ctx->err_code;
    for (int done = 0; done < n; done += TFLCU_OPT_CHUNK) {
        int m = n - done < TFLCU_OPT_CHUNK ? n - done : TFLCU_OPT_CHUNK;
        TFL_TRY(tfl__cuda_check(
            dev, tflcu_opt_sumsq((int)dtype, m, t + done, partial, sums + done, stream),
            "the sum of squares kernel"));
    }
    return TFL_OK;
}

static tfl_status cu_opt_clip_scales_device(tfl_ctx *ctx, tfl__device *dev, int n, double *sums,
                                            const tfl__opt_clip *clip)
{
    (void)ctx;
    return tfl__cuda_check(
        dev, tflcu_opt_clip_scales(n, sums, clip->c, clip->per_variable, clip->tf, tfl__cuda_stream(dev)),
        "the gradient clipping kernel");
}

const tfl__opt_kernels tfl__cuda_opt_kernels = {
    .apply = cu_opt_apply,
    .sumsq = cu_opt_sumsq,
    .dtypes = TFL_DT(FLOAT32) | TFL_DT(FLOAT64),
    .sumsq_device = cu_opt_sumsq_device,
    .clip_scales_device = cu_opt_clip_scales_device,
};
