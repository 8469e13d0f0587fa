/*
 * framework/cpu/k_pool.c: CPU kernels of MaxPool, AvgPool and their gradient ops
 * (MaxPoolGrad, MaxPoolGradGrad, AvgPoolGrad) on NHWC images, float32 and float64; the
 * loops are in pool_loops.h. Forward ops and MaxPoolGradGrad write disjoint output rows,
 * so threads share rows; the two gradients scatter into overlapping windows, so a thread
 * owns whole images (or, for fewer images than threads, a block of channels of one).
 */
#include "ops/op.h"
#include "cpu.h"
#include "kernels.h"

/* 32-byte vectors of channels (GCC vector extensions; pool_loops.h), and their masks: one
 * ymm register in the AVX2 and AVX-512 copies (GCC splits the compares of 64-byte vectors
 * into scalar ones when only AVX2 is there, which made MaxPoolGrad ten times slower) */
typedef float vf32 __attribute__((vector_size(32)));
typedef int32_t vi32 __attribute__((vector_size(32)));
typedef double vf64 __attribute__((vector_size(32)));
typedef int64_t vi64 __attribute__((vector_size(32)));

/* The shapes of one pooling (elements) and its window. */
typedef struct pgeom {
    int64_t n, h, w, c;     /* input (N, H, W, C) */
    int64_t kh, kw;         /* window */
    int64_t oh, ow;         /* output (N, OH, OW, C) */
    int64_t sh, sw, pt, pl; /* strides, padding before */
} pgeom;

/* Output o's window along one axis, clipped to [0, in): [*a, *b). */
static inline void window(int64_t o, int64_t s, int64_t pad, int64_t k, int64_t in, int64_t *a,
                          int64_t *b)
{
    int64_t start = o * s - pad, end = start + k;
    *a = start > 0 ? start : 0;
    *b = end < in ? end : in;
}

#define T float
#define VT vf32
#define VI vi32
#define VW 8
#define FN(name) name##_f32
#include "pool_loops.h"
#undef T
#undef VT
#undef VI
#undef VW
#undef FN
#define T double
#define VT vf64
#define VI vi64
#define VW 4
#define FN(name) name##_f64
#include "pool_loops.h"
#undef T
#undef VT
#undef VI
#undef VW
#undef FN

static pgeom make_pgeom(const int64_t *xs, const int64_t *ys, const tfl__window_attrs *a)
{
    pgeom g = {.n = xs[0],
               .h = xs[1],
               .w = xs[2],
               .c = xs[3],
               .kh = a->ksize[0],
               .kw = a->ksize[1],
               .oh = ys[1],
               .ow = ys[2],
               .sh = a->strides[0],
               .sw = a->strides[1],
               .pt = a->pad[0],
               .pl = a->pad[1]};
    return g;
}

static int threads_for(const tfl__kcall *k, int64_t elements)
{
    return elements >= TFL_CPU_PARALLEL_MIN ? k->ctx->num_threads : 1;
}

/* ---- MaxPool, AvgPool, MaxPoolGradGrad: one output row (n, oh) at a time ------------------ */

static tfl_status k_pool_rows(const tfl__kcall *k)
{
    tfl_ctx *ctx = k->ctx;
    tfl_tensor *tx = NULL, *tg = NULL;
    const tfl_tensor *x = tfl__cpu_contiguous(ctx, k->in[0], &tx), *gg = NULL;
    if (x && k->op == TFL_OP_MAX_POOL_GRAD_GRAD) gg = tfl__cpu_contiguous(ctx, k->in[1], &tg);
    if (!x || (k->op == TFL_OP_MAX_POOL_GRAD_GRAD && !gg)) {
        tfl_tensor_release(tx);
        return ctx->err_code;
    }
    pgeom g = make_pgeom(x->shape, k->out->shape, k->attrs);
    bool f32 = k->out->dtype == TFL_DTYPE_FLOAT32;
    size_t es = tfl_dtype_size((tfl_dtype)k->out->dtype);
    const void *xd = tfl__data(x), *gd = gg ? tfl__data(gg) : NULL;
    char *yd = tfl__data(k->out);
    int64_t rows = g.n * g.oh, row = g.ow * g.c;
    int threads = threads_for(k, x->numel);
    tfl__op_id op = k->op;
    if (k->out->numel > 0) {
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            void *y = yd + (size_t)(r * row) * es;
            int64_t n = r / g.oh, oh = r % g.oh;
            if (op == TFL_OP_MAX_POOL) {
                if (f32)
                    max_pool_row_f32(&g, xd, n, oh, y);
                else
                    max_pool_row_f64(&g, xd, n, oh, y);
            } else if (op == TFL_OP_AVG_POOL) {
                if (f32)
                    avg_pool_row_f32(&g, xd, n, oh, y);
                else
                    avg_pool_row_f64(&g, xd, n, oh, y);
            } else {
                if (f32)
                    max_pool_grad_grad_row_f32(&g, xd, gd, n, oh, y);
                else
                    max_pool_grad_grad_row_f64(&g, xd, gd, n, oh, y);
            }
        }
    }
    tfl_tensor_release(tx);
    tfl_tensor_release(tg);
    return TFL_OK;
}

/* ---- MaxPoolGrad, AvgPoolGrad: a thread owns an image, or a block of its channels --------- */

static tfl_status k_pool_grads(const tfl__kcall *k)
{
    tfl_ctx *ctx = k->ctx;
    bool max = k->op == TFL_OP_MAX_POOL_GRAD;
    tfl_tensor *tx = NULL, *tdy = NULL;
    const tfl_tensor *x = max ? tfl__cpu_contiguous(ctx, k->in[0], &tx) : NULL;
    const tfl_tensor *dy = !max || x ? tfl__cpu_contiguous(ctx, k->in[max ? 1 : 0], &tdy) : NULL;
    if (!dy) {
        tfl_tensor_release(tx);
        return ctx->err_code;
    }
    pgeom g = make_pgeom(k->out->shape, dy->shape, k->attrs);
    bool f32 = k->out->dtype == TFL_DTYPE_FLOAT32;
    const void *xd = x ? tfl__data(x) : NULL, *dyd = tfl__data(dy);
    void *dx = tfl__data(k->out);
    int threads = threads_for(k, k->out->numel);
    /* channel blocks per image: 1, unless there are fewer images than threads */
    int64_t blocks = g.n >= threads ? 1 : (g.c + 15) / 16;
    if (blocks > threads) blocks = threads;
    if (blocks < 1) blocks = 1;
    int64_t tasks = g.n * blocks;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (int64_t t = 0; t < tasks; t++) {
        int64_t n = t / blocks, b = t % blocks;
        int64_t c0 = g.c * b / blocks, c1 = g.c * (b + 1) / blocks;
        if (max) {
            if (f32)
                max_pool_grad_img_f32(&g, xd, dyd, n, c0, c1, dx);
            else
                max_pool_grad_img_f64(&g, xd, dyd, n, c0, c1, dx);
        } else {
            if (f32)
                avg_pool_grad_img_f32(&g, dyd, n, c0, c1, dx);
            else
                avg_pool_grad_img_f64(&g, dyd, n, c0, c1, dx);
        }
    }
    tfl_tensor_release(tx);
    tfl_tensor_release(tdy);
    return TFL_OK;
}

#define M_FLOAT (TFL_DT(FLOAT32) | TFL_DT(FLOAT64))

const tfl__kernel tfl__cpu_pool_kernels[TFL_OP_COUNT] = {
    [TFL_OP_MAX_POOL] = {k_pool_rows, M_FLOAT, NULL},
    [TFL_OP_AVG_POOL] = {k_pool_rows, M_FLOAT, NULL},
    [TFL_OP_MAX_POOL_GRAD_GRAD] = {k_pool_rows, M_FLOAT, NULL},
    [TFL_OP_MAX_POOL_GRAD] = {k_pool_grads, M_FLOAT, NULL},
    [TFL_OP_AVG_POOL_GRAD] = {k_pool_grads, M_FLOAT, NULL},
};
