/*
 * framework/cuda/cuda_pool.c: the GPU kernels of MaxPool, AvgPool and their gradient ops
 * (MaxPoolGrad, MaxPoolGradGrad, AvgPoolGrad), NHWC, float32 and float64, float16 and bfloat16
 * (computed in float32, as the dispatcher's float32 path would, without its two conversion
 * passes): operands made
 * contiguous, the geometry from the op's tfl__window_attrs (ops/conv.c resolved it), the
 * kernels in k_pool.cu. MaxPoolGrad takes one temporary: each window's argmax (pooled numel
 * int64), released at once (the caching allocator reuses it in stream order). These are
 * written for the CPU's semantics, not cuDNN's (framework/cuda/README.md says why).
 */
#include "cuda_internal.h"

/* in: the (N, H, W, C) input's shape, pooled: the (N, OH, OW, C) output's */
static tflcu_pool geometry(const int64_t *in, const int64_t *pooled, const tfl__window_attrs *a)
{
    tflcu_pool g = {.n = in[0],
                    .h = in[1],
                    .w = in[2],
                    .c = in[3],
                    .kh = a->ksize[0],
                    .kw = a->ksize[1],
                    .oh = pooled[1],
                    .ow = pooled[2],
                    .sh = a->strides[0],
                    .sw = a->strides[1],
                    .pt = a->pad[0],
                    .pl = a->pad[1]};
    return g;
}

/* MaxPool, AvgPool, MaxPoolGradGrad: the pooled output from x (and g) */
static tfl_status k_pool_fwd(const tfl__kcall *k)
{
    bool gg = k->op == TFL_OP_MAX_POOL_GRAD_GRAD;
    tfl_tensor *tx = NULL, *tg = NULL;
    const tfl_tensor *x = tfl__cuda_contiguous(k, k->in[0], &tx);
    const tfl_tensor *g = x && gg ? tfl__cuda_contiguous(k, k->in[1], &tg) : NULL;
    tfl_status st = k->ctx->err_code;
    if (x && (!gg || g)) {
        tflcu_pool geo = geometry(x->shape, k->out->shape, k->attrs);
        st = tfl__cuda_check(k->dev,
                             tflcu_pool_run(k->op, x->dtype, &geo, tfl__data(x),
                                            g ? tfl__data(g) : NULL, tfl__data(k->out), NULL,
                                            tfl__cuda_stream(k->dev)),
                             tfl__op_name(k->op));
    }
    tfl_tensor_release(tx);
    tfl_tensor_release(tg);
    return st;
}

/* MaxPoolGrad (x, dy) and AvgPoolGrad (dy): dx of the input's shape, gathered */
static tfl_status k_pool_grad(const tfl__kcall *k)
{
    bool max = k->op == TFL_OP_MAX_POOL_GRAD;
    tfl_tensor *tx = NULL, *tdy = NULL, *arg = NULL;
    const tfl_tensor *x = max ? tfl__cuda_contiguous(k, k->in[0], &tx) : NULL;
    const tfl_tensor *dy = !max || x ? tfl__cuda_contiguous(k, k->in[max ? 1 : 0], &tdy) : NULL;
    if (dy && max) {
        arg = tfl__tensor_alloc(k->ctx, k->dev, TFL_DTYPE_INT64, 4, dy->shape);
        if (!arg) dy = NULL;
    }
    tfl_status st = k->ctx->err_code;
    if (dy) {
        tflcu_pool geo = geometry(k->out->shape, dy->shape, k->attrs);
        st = tfl__cuda_check(
            k->dev,
            tflcu_pool_run(k->op, dy->dtype, &geo, max ? tfl__data(x) : tfl__data(dy),
                           max ? tfl__data(dy) : NULL, tfl__data(k->out),
                           arg ? (int64_t *)tfl__data(arg) : NULL, tfl__cuda_stream(k->dev)),
            tfl__op_name(k->op));
    }
    tfl_tensor_release(arg);
    tfl_tensor_release(tx);
    tfl_tensor_release(tdy);
    return st;
}

#define M_F (TFL_DT(FLOAT32) | TFL_DT(FLOAT64) | TFL_DT(FLOAT16) | TFL_DT(BFLOAT16))

const tfl__kernel tfl__cuda_pool_kernels[TFL_OP_COUNT] = {
    [TFL_OP_MAX_POOL] = {k_pool_fwd, M_F, NULL},
    [TFL_OP_AVG_POOL] = {k_pool_fwd, M_F, NULL},
    [TFL_OP_MAX_POOL_GRAD_GRAD] = {k_pool_fwd, M_F, NULL},
    [TFL_OP_MAX_POOL_GRAD] = {k_pool_grad, M_F, NULL},
    [TFL_OP_AVG_POOL_GRAD] = {k_pool_grad, M_F, NULL},
};
