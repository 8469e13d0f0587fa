/*
 * framework/cuda/k_pool.cu: MaxPool, AvgPool, MaxPoolGrad, MaxPoolGradGrad and AvgPoolGrad on
 * NHWC images, float32 and float64 (the host side is cuda_pool.c). The semantics are the
 * CPU's (framework/cpu/k_pool.c, pool_loops.h), operation for operation:
 *
 *   - windows are clipped to the image; padded positions are never read and never counted;
 *   - MaxPool folds the window row-major from its first position, m = x > m ? x : m (so a NaN
 *     in the first position stays, a later NaN is passed over, as on the CPU);
 *   - the argmax of a window (MaxPoolGrad, MaxPoolGradGrad) is the first position, row-major,
 *     whose value equals that max: ties go to the first; a window whose max is NaN has none
 *     (it passes no gradient, and MaxPoolGradGrad gives 0 there);
 *   - AvgPool sums the window's positions row-major from 0, then multiplies by
 *     (T)1 / (T)(positions inside the image);
 *   - the gradients are gathers, one thread per input element, over the output windows that
 *     contain it, in row-major order of the windows: the order in which the CPU's scatter adds
 *     into that element. No atomics, so every run gives the same bits.
 *
 * Multiplications and additions are the correctly rounded intrinsics (__fmul_rn, __fadd_rn,
 * ...), which nvcc never contracts into an FMA, and the reciprocal a correctly rounded
 * division, so the results are the CPU's bit for bit (the CPU is compiled as ISO C11,
 * -ffp-contract=off). One difference that no comparison by value sees: where windows do not
 * overlap (strides >= window), the CPU's vectorized channels store dy at the argmax, so a dy
 * of -0.0 stays -0.0 there, while its scalar tail channels and this gather add it to +0.0
 * (giving +0.0). The harness's tolerance (tests/backend/test_backend_ops.c) is therefore never
 * used by these kernels except through that sign of zero.
 */
#include "cu_common.cuh"

namespace
{

__device__ __forceinline__ float add_rn(float a, float b)
{
    return __fadd_rn(a, b);
}
__device__ __forceinline__ double add_rn(double a, double b)
{
    return __dadd_rn(a, b);
}
__device__ __forceinline__ float mul_rn(float a, float b)
{
    return __fmul_rn(a, b);
}
__device__ __forceinline__ double mul_rn(double a, double b)
{
    return __dmul_rn(a, b);
}
/* (T)1 / (T)count, correctly rounded, as the CPU's */
__device__ __forceinline__ float inv_count(int64_t count, float)
{
    return __fdiv_rn(1.0f, (float)count);
}
__device__ __forceinline__ double inv_count(int64_t count, double)
{
    return __ddiv_rn(1.0, (double)count);
}

/* output o's window along one axis, clipped to [0, in): [*a, *b) (k_pool.c's window()) */
__device__ __forceinline__ void window(int64_t o, int64_t s, int64_t pad, int64_t k, int64_t in,
                                       int64_t *a, int64_t *b)
{
    int64_t start = o * s - pad, end = start + k;
    *a = start > 0 ? start : 0;
    *b = end < in ? end : in;
}

/* the outputs along one axis whose window contains input position i: [*a, *b] (inclusive;
 * empty when *a > *b). Window o covers [o s - pad, o s - pad + k). */
__device__ __forceinline__ void covering(int64_t i, int64_t s, int64_t pad, int64_t k, int64_t out,
                                         int64_t *a, int64_t *b)
{
    int64_t lo = i + pad - k + 1; /* o s >= lo */
    *a = lo <= 0 ? 0 : (lo + s - 1) / s;
    int64_t hi = (i + pad) / s; /* i + pad >= 0 */
    *b = hi < out - 1 ? hi : out - 1;
}

/* output element e = ((n, oh), ow, c): its image, window and channel */
struct Win {
    int64_t n, c, oh, ow, hs, he, ws, we;
};
__device__ __forceinline__ Win out_window(const tflcu_pool &g, int64_t e)
{
    Win w;
    w.c = e % g.c;
    int64_t r = e / g.c;
    w.ow = r % g.ow;
    r /= g.ow;
    w.oh = r % g.oh;
    w.n = r / g.oh;
    window(w.oh, g.sh, g.pt, g.kh, g.h, &w.hs, &w.he);
    window(w.ow, g.sw, g.pl, g.kw, g.w, &w.ws, &w.we);
    return w;
}

/* the window's max, folded from its first position (pool_loops.h's max_pool_row) */
template <typename T>
__device__ __forceinline__ T window_max(const tflcu_pool &g, const T *xn, const Win &w)
{
    T m = xn[(w.hs * g.w + w.ws) * g.c + w.c];
    for (int64_t ih = w.hs; ih < w.he; ih++)
        for (int64_t iw = ih == w.hs ? w.ws + 1 : w.ws; iw < w.we; iw++) {
            T v = xn[(ih * g.w + iw) * g.c + w.c];
            m = v > m ? v : m;
        }
    return m;
}

/* the first position (ih W + iw) whose value equals the window's max, or -1 (a NaN max) */
template <typename T>
__device__ __forceinline__ int64_t window_argmax(const tflcu_pool &g, const T *xn, const Win &w)
{
    T m = window_max(g, xn, w);
    for (int64_t ih = w.hs; ih < w.he; ih++)
        for (int64_t iw = w.ws; iw < w.we; iw++)
            if (xn[(ih * g.w + iw) * g.c + w.c] == m) return ih * g.w + iw;
    return -1;
}

template <typename T> __global__ void max_pool_kernel(tflcu_pool g, const T *x, T *y, int64_t n)
{
    TFLCU_LOOP(e, n)
    {
        Win w = out_window(g, e);
        y[e] = window_max(g, x + w.n * g.h * g.w * g.c, w);
    }
}

template <typename T> __global__ void avg_pool_kernel(tflcu_pool g, const T *x, T *y, int64_t n)
{
    TFLCU_LOOP(e, n)
    {
        Win w = out_window(g, e);
        const T *xn = x + w.n * g.h * g.w * g.c;
        T acc = 0;
        for (int64_t ih = w.hs; ih < w.he; ih++)
            for (int64_t iw = w.ws; iw < w.we; iw++)
                acc = add_rn(acc, xn[(ih * g.w + iw) * g.c + w.c]);
        y[e] = mul_rn(acc, inv_count((w.he - w.hs) * (w.we - w.ws), T()));
    }
}

/* MaxPoolGradGrad: gg at each window's argmax of x, 0 where there is none */
template <typename T>
__global__ void max_pool_grad_grad_kernel(tflcu_pool g, const T *x, const T *gg, T *y, int64_t n)
{
    TFLCU_LOOP(e, n)
    {
        Win w = out_window(g, e);
        const int64_t img = w.n * g.h * g.w * g.c;
        int64_t p = window_argmax(g, x + img, w);
        y[e] = p >= 0 ? gg[img + p * g.c + w.c] : (T)0;
    }
}

/* MaxPoolGrad, step 1: arg[e] = the argmax (ih W + iw) of output element e's window, or -1 */
template <typename T>
__global__ void argmax_kernel(tflcu_pool g, const T *x, int64_t *arg, int64_t n)
{
    TFLCU_LOOP(e, n)
    {
        Win w = out_window(g, e);
        arg[e] = window_argmax(g, x + w.n * g.h * g.w * g.c, w);
    }
}

/* input element e = ((n, ih), iw, c) and the outputs whose windows contain it */
struct Cover {
    int64_t n, c, ih, iw, oh0, oh1, ow0, ow1;
};
__device__ __forceinline__ Cover in_cover(const tflcu_pool &g, int64_t e)
{
    Cover v;
    v.c = e % g.c;
    int64_t r = e / g.c;
    v.iw = r % g.w;
    r /= g.w;
    v.ih = r % g.h;
    v.n = r / g.h;
    covering(v.ih, g.sh, g.pt, g.kh, g.oh, &v.oh0, &v.oh1);
    covering(v.iw, g.sw, g.pl, g.kw, g.ow, &v.ow0, &v.ow1);
    return v;
}

/* MaxPoolGrad, step 2: dx[e] = the sum of dy over the windows whose argmax e is, in the
 * windows' row-major order, from +0 */
template <typename T>
__global__ void max_pool_grad_kernel(tflcu_pool g, const int64_t *arg, const T *dy, T *dx,
                                     int64_t n)
{
    TFLCU_LOOP(e, n)
    {
        Cover v = in_cover(g, e);
        const int64_t pos = v.ih * g.w + v.iw;
        T acc = 0;
        for (int64_t oh = v.oh0; oh <= v.oh1; oh++)
            for (int64_t ow = v.ow0; ow <= v.ow1; ow++) {
                int64_t o = ((v.n * g.oh + oh) * g.ow + ow) * g.c + v.c;
                if (arg[o] == pos) acc = add_rn(acc, dy[o]);
            }
        dx[e] = acc;
    }
}

/* AvgPoolGrad: dx[e] = the sum of dy * (1 / count) over the windows containing e, in the
 * windows' row-major order, from +0 (each product rounded, then added: no FMA) */
template <typename T>
__global__ void avg_pool_grad_kernel(tflcu_pool g, const T *dy, T *dx, int64_t n)
{
    TFLCU_LOOP(e, n)
    {
        Cover v = in_cover(g, e);
        T acc = 0;
        for (int64_t oh = v.oh0; oh <= v.oh1; oh++) {
            int64_t hs, he;
            window(oh, g.sh, g.pt, g.kh, g.h, &hs, &he);
            for (int64_t ow = v.ow0; ow <= v.ow1; ow++) {
                int64_t ws, we;
                window(ow, g.sw, g.pl, g.kw, g.w, &ws, &we);
                const T inv = inv_count((he - hs) * (we - ws), T());
                acc = add_rn(acc, mul_rn(dy[((v.n * g.oh + oh) * g.ow + ow) * g.c + v.c], inv));
            }
        }
        dx[e] = acc;
    }
}

template <typename T>
int pool_run(int op, const tflcu_pool *g, const void *x, const void *x2, void *y, int64_t *arg,
             cudaStream_t s)
{
    const int64_t n_out = g->n * g->oh * g->ow * g->c, n_in = g->n * g->h * g->w * g->c;
    switch (op) {
    case TFL_OP_MAX_POOL:
        if (n_out == 0) return 0;
        max_pool_kernel<T>
            <<<tflcu_blocks(n_out), TFLCU_THREADS, 0, s>>>(*g, (const T *)x, (T *)y, n_out);
        break;
    case TFL_OP_AVG_POOL:
        if (n_out == 0) return 0;
        avg_pool_kernel<T>
            <<<tflcu_blocks(n_out), TFLCU_THREADS, 0, s>>>(*g, (const T *)x, (T *)y, n_out);
        break;
    case TFL_OP_MAX_POOL_GRAD_GRAD:
        if (n_out == 0) return 0;
        max_pool_grad_grad_kernel<T><<<tflcu_blocks(n_out), TFLCU_THREADS, 0, s>>>(
            *g, (const T *)x, (const T *)x2, (T *)y, n_out);
        break;
    case TFL_OP_MAX_POOL_GRAD:
        if (n_in == 0) return 0;
        if (n_out > 0) {
            argmax_kernel<T>
                <<<tflcu_blocks(n_out), TFLCU_THREADS, 0, s>>>(*g, (const T *)x, arg, n_out);
            int err = tflcu_status();
            if (err) return err;
        }
        max_pool_grad_kernel<T><<<tflcu_blocks(n_in), TFLCU_THREADS, 0, s>>>(
            *g, (const int64_t *)arg, (const T *)x2, (T *)y, n_in);
        break;
    case TFL_OP_AVG_POOL_GRAD:
        if (n_in == 0) return 0;
        avg_pool_grad_kernel<T>
            <<<tflcu_blocks(n_in), TFLCU_THREADS, 0, s>>>(*g, (const T *)x, (T *)y, n_in);
        break;
    default:
        return -1;
    }
    return tflcu_status();
}

} // namespace

extern "C" int tflcu_pool_run(int op, int dtype, const tflcu_pool *g, const void *x, const void *x2,
                              void *y, int64_t *arg, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (dtype == TFL_DTYPE_FLOAT32) return pool_run<float>(op, g, x, x2, y, arg, s);
    if (dtype == TFL_DTYPE_FLOAT64) return pool_run<double>(op, g, x, x2, y, arg, s);
    return -1;
}
