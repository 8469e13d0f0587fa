/*
 * framework/cuda/cuda_conv.c: the GPU kernels of Conv2D, Conv2DBackpropInput and
 * Conv2DBackpropFilter (float32, float64; NHWC images, HWIO filters, the CPU's geometry:
 * framework/cpu/k_conv.c). Each tries cuDNN first (cudnn_conv.c, when the build has it);
 * without cuDNN, with TFL_CUDNN=0, or for a shape cuDNN takes no algorithm for, it runs
 * im2col + cuBLAS, which always exists:
 *   forward          y (M, Cout)  = col(x) (M, K) * w (K, Cout)
 *   backprop filter  dw (K, Cout) = sum over chunks of col(x)^T dy
 *   backprop input   dx           = col2im(dy (M, Cout) * w^T (Cout, K))
 * with M = N OH OW output pixels and K = KH KW Cin taps (k_conv.cu lays col out as
 * conv_loops.h). The pixels run in chunks whose im2col buffer is at most COL_CAP bytes, one
 * buffer from the device's caching allocator, the chunks one after the other on the device's
 * stream. A 1x1 filter with stride 1 and no padding needs no im2col: x itself is col. col2im
 * is a gather per dx element (no atomics), so every path here gives the same bits on every
 * run; the backprop filter adds the chunks' products in order (cuBLAS beta = 1).
 * The matrices are row-major; cuBLAS is column-major, so each product is issued transposed.
 */
#include "cuda_internal.h"

#ifndef TFL_CUDA_CONV_COL_CAP /* bytes of im2col memory an op may hold (a host test sets less) */
#define TFL_CUDA_CONV_COL_CAP ((int64_t)64 << 20)
#endif
#define COL_CAP TFL_CUDA_CONV_COL_CAP

static tflcu_conv make_geom(const int64_t *xs, const int64_t *fs, const int64_t *ys,
                            const tfl__window_attrs *a)
{
    tflcu_conv g = {.n = xs[0],
                    .h = xs[1],
                    .w = xs[2],
                    .c = xs[3],
                    .kh = fs[0],
                    .kw = fs[1],
                    .f = fs[3],
                    .oh = ys[1],
                    .ow = ys[2],
                    .sh = a->strides[0],
                    .sw = a->strides[1],
                    .dh = a->dilations[0],
                    .dw = a->dilations[1],
                    .pt = a->pad[0],
                    .pl = a->pad[1]};
    return g;
}

static bool is_direct(const tflcu_conv *g)
{
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0;
}

/* The chunking of the M output pixels: `per` pixels a chunk (im2col: at most COL_CAP bytes
 * of col; at most 2^31 - 1 pixels, cuBLAS's int) */
typedef struct plan {
    bool direct;
    int64_t m, per, col_bytes;
} plan;

static plan make_plan(const tflcu_conv *g, size_t es)
{
    plan p = {is_direct(g), g->n * g->oh * g->ow, 0, 0};
    int64_t K = g->kh * g->kw * g->c, row = K * (int64_t)es;
    int64_t per = p.direct ? p.m : COL_CAP / (row > 0 ? row : 1);
    if (per < 1) per = 1;
    if (per > p.m) per = p.m;
    if (per > INT32_MAX) per = INT32_MAX;
    p.per = per;
    p.col_bytes = p.direct ? 0 : per * row;
    return p;
}

/* column-major C (m x n) = op(A) op(B) (+ C when accumulate), float32 or float64 */
static tfl_status gemm(const tfl__kcall *k, const char *name, tfl_dtype dt, cublasOperation_t ta,
                       cublasOperation_t tb, int64_t m, int64_t n, int64_t kk, const void *a,
                       int64_t lda, const void *b, int64_t ldb, bool accumulate, void *c,
                       int64_t ldc)
{
    if (m > INT32_MAX || n > INT32_MAX || kk > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX ||
        ldc > INT32_MAX)
        return tfl__set_error(k->ctx, TFL_UNIMPLEMENTED,
                              "%s: a product of %lld x %lld x %lld is above cuBLAS's 2^31-1 on %s",
                              name, (long long)m, (long long)n, (long long)kk, k->dev->name);
    cublasHandle_t h = tfl__cuda(k->dev)->blas;
    cublasStatus_t bs;
    if (dt == TFL_DTYPE_FLOAT32) {
        const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
        tfl__cuda_blas_policy(k);
        bs = cublasSgemm(h, ta, tb, (int)m, (int)n, (int)kk, &one, a, (int)lda, b, (int)ldb, &beta,
                         c, (int)ldc);
    } else {
        const double one = 1.0, beta = accumulate ? 1.0 : 0.0;
        bs = cublasDgemm(h, ta, tb, (int)m, (int)n, (int)kk, &one, a, (int)lda, b, (int)ldb, &beta,
                         c, (int)ldc);
    }
    if (bs == CUBLAS_STATUS_SUCCESS) return TFL_OK;
    return tfl__set_error(k->ctx, TFL_INTERNAL, "%s: cuBLAS failed on %s: %s", name, k->dev->name,
                          cublasGetStatusString(bs));
}

/* the two inputs, contiguous (copies in *ta, *tb where they are views); false with the error
 * kept */
static bool inputs(const tfl__kcall *k, const tfl_tensor **a, const tfl_tensor **b, tfl_tensor **ta,
                   tfl_tensor **tb)
{
    *a = tfl__cuda_contiguous(k, k->in[0], ta);
    *b = *a ? tfl__cuda_contiguous(k, k->in[1], tb) : NULL;
    return *b != NULL;
}

static tfl_status zero(const tfl__kcall *k)
{
    size_t es = tfl_dtype_size((tfl_dtype)k->out->dtype);
    return tfl__dev_memset(k->dev, NULL, tfl__data(k->out), 0, (size_t)k->out->numel * es);
}

/* col buffer for plan p (NULL with the error kept when out of device memory) */
static void *col_get(const tfl__kcall *k, const plan *p, size_t *got)
{
    *got = 0;
    if (p->direct) return NULL;
    return tfl__allocator_get(&k->dev->alloc, (size_t)p->col_bytes, got);
}

/* ---- the im2col paths ----------------------------------------------------------------------- */

/* The two products that read im2col(x), chunk by chunk (x itself when direct):
 *   forward          y^T (F x rows) = w^T (F x K) col^T (K x rows)      (w: wd, y: out)
 *   backprop filter  dw^T (F x K) (+)= dy^T (F x rows) col (rows x K)   (dy: wd, dw: out) */
static tfl_status from_col(const tfl__kcall *k, const tflcu_conv *g, bool filter, const char *xd,
                           const char *wd, char *out)
{
    const char *what = filter ? "Conv2DBackpropFilter" : "Conv2D";
    tfl_dtype dt = (tfl_dtype)k->out->dtype;
    size_t es = tfl_dtype_size(dt);
    const int64_t K = g->kh * g->kw * g->c, F = g->f;
    plan p = make_plan(g, es);
    size_t got = 0;
    char *col = col_get(k, &p, &got);
    if (!p.direct && !col) return k->ctx->err_code;
    tfl_status st = TFL_OK;
    for (int64_t m0 = 0; m0 < p.m && st == TFL_OK; m0 += p.per) {
        int64_t m1 = m0 + p.per < p.m ? m0 + p.per : p.m;
        const char *cm = p.direct ? xd + (size_t)(m0 * K) * es : col;
        if (!p.direct)
            st = tfl__cuda_check(k->dev,
                                 tflcu_im2col(dt, g, xd, m0, m1, col, tfl__cuda_stream(k->dev)),
                                 filter ? "Conv2DBackpropFilter (im2col)" : "Conv2D (im2col)");
        if (st != TFL_OK) break;
        if (filter)
            st = gemm(k, what, dt, CUBLAS_OP_N, CUBLAS_OP_T, F, K, m1 - m0,
                      wd + (size_t)(m0 * F) * es, F, cm, K, m0 > 0, out, F);
        else
            st = gemm(k, what, dt, CUBLAS_OP_N, CUBLAS_OP_N, F, m1 - m0, K, wd, F, cm, K, false,
                      out + (size_t)(m0 * F) * es, F);
    }
    if (col) tfl__allocator_put(&k->dev->alloc, col, got);
    return st;
}

static tfl_status backprop_input(const tfl__kcall *k, const tflcu_conv *g, const char *wd,
                                 const char *dyd, char *dx)
{
    tfl_dtype dt = (tfl_dtype)k->out->dtype;
    size_t es = tfl_dtype_size(dt);
    const int64_t K = g->kh * g->kw * g->c, F = g->f, ohw = g->oh * g->ow;
    plan p = make_plan(g, es);
    size_t got = 0;
    char *col = col_get(k, &p, &got);
    if (!p.direct && !col) return k->ctx->err_code;
    /* direct: every dx element is written by one product; else the chunks add into dx */
    tfl_status st = p.direct ? TFL_OK : zero(k);
    for (int64_t m0 = 0; m0 < p.m && st == TFL_OK; m0 += p.per) {
        int64_t m1 = m0 + p.per < p.m ? m0 + p.per : p.m;
        char *dcol = p.direct ? dx + (size_t)(m0 * K) * es : col;
        /* dcol^T (K x rows) = w (K x F) dy^T (F x rows) */
        st = gemm(k, "Conv2DBackpropInput", dt, CUBLAS_OP_T, CUBLAS_OP_N, K, m1 - m0, F, wd, F,
                  dyd + (size_t)(m0 * F) * es, F, false, dcol, K);
        if (st != TFL_OK || p.direct) continue;
        /* the dx rows (n H + ih) the chunk's windows reach: from its first output row's first
           input row to its last output row's last, clipped to the image (as the CPU) */
        int64_t na = m0 / ohw, oha = m0 / g->ow % g->oh;
        int64_t nb = (m1 - 1) / ohw, ohb = (m1 - 1) / g->ow % g->oh;
        int64_t lo = oha * g->sh - g->pt, hi = ohb * g->sh - g->pt + (g->kh - 1) * g->dh;
        int64_t r0 = na * g->h + (lo > 0 ? lo : 0);
        int64_t r1 = nb * g->h + (hi < g->h - 1 ? hi : g->h - 1) + 1;
        int64_t rowlen = g->w * g->c;
        st = tfl__cuda_check(k->dev,
                             tflcu_col2im(dt, g, col, m0, m1, dx, r0 * rowlen, r1 * rowlen,
                                          tfl__cuda_stream(k->dev)),
                             "Conv2DBackpropInput (col2im)");
    }
    if (col) tfl__allocator_put(&k->dev->alloc, col, got);
    return st;
}

/* ---- the kernels ---------------------------------------------------------------------------- */

/* One of the three convolutions: a and b are the kind's operands (tfl__conv_kind: x and w, x
 * and dy, or w and dy), made contiguous; an output that nothing flows into is zeroed; else
 * cuDNN runs it, or when cuDNN does not take it (false; else st is cuDNN's status) im2col
 * (float32 and float64; a 16-bit call is declined, TFL__KERNEL_DECLINED). */
static tfl_status conv(const tfl__kcall *k, tfl__conv_kind kind)
{
    const tfl_tensor *a, *b;
    tfl_tensor *ta = NULL, *tb = NULL;
    tfl_status st = TFL_OK;
    if (k->out->numel == 0) return TFL_OK;
    if (!inputs(k, &a, &b, &ta, &tb)) {
        st = k->ctx->err_code;
        goto done;
    }
    const tfl__window_attrs *at = k->attrs;
    tflcu_conv g;
    bool empty;
    if (kind == TFL__CONV_FWD) {
        g = make_geom(a->shape, b->shape, k->out->shape, at);
        empty = g.c == 0; /* no taps: y = 0 */
    } else if (kind == TFL__CONV_BWD_FILTER) {
        g = make_geom(a->shape, at->shape, b->shape, at);
        empty = g.n * g.oh * g.ow == 0; /* an empty batch: no pixel adds anything */
    } else {
        g = make_geom(at->shape, a->shape, b->shape, at);
        empty = g.f == 0 || g.n * g.oh * g.ow == 0; /* nothing flows back: dx = 0 */
    }
    st = tfl__cuda_use(k->dev); /* the device current before cuDNN's handle is made */
    /* float16 and bfloat16 run through cuDNN only; a shape it does not take goes back to the
     * dispatcher, which runs it in float32 between conversions */
    const bool half = k->out->dtype == TFL_DTYPE_FLOAT16 || k->out->dtype == TFL_DTYPE_BFLOAT16;
    const char *ad = tfl__data(a), *bd = tfl__data(b);
    char *out = tfl__data(k->out);
    if (st == TFL_OK && empty)
        st = zero(k);
    else if (st == TFL_OK && !tfl__cudnn_conv(k, kind, &g, ad, bd, out, &st))
        st = half                           ? TFL__KERNEL_DECLINED /* float32 im2col instead */
             : kind == TFL__CONV_FWD        ? from_col(k, &g, false, ad, bd, out)
             : kind == TFL__CONV_BWD_FILTER ? from_col(k, &g, true, ad, bd, out)
                                            : backprop_input(k, &g, ad, bd, out);
done:
    tfl_tensor_release(ta);
    tfl_tensor_release(tb);
    return st;
}

tfl_status tfl__cuda_conv2d(const tfl__kcall *k)
{
    return conv(k, TFL__CONV_FWD);
}

tfl_status tfl__cuda_conv2d_backprop_filter(const tfl__kcall *k)
{
    return conv(k, TFL__CONV_BWD_FILTER);
}

tfl_status tfl__cuda_conv2d_backprop_input(const tfl__kcall *k)
{
    return conv(k, TFL__CONV_BWD_DATA);
}
