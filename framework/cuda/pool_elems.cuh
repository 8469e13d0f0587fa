/*
 * framework/cuda/pool_elems.cuh: one output (or input) element of each pooling op, as
 * functions that nvcc compiles for the GPU (k_pool.cu's kernels call them, one thread per
 * element) and for the host, where tests/test_pool_elems.cu (this folder) checks them against
 * the CPU's kernels bit for bit without a GPU. Needs only cu_launch.h's tflcu_pool and <stdint.h>.
 *
 * Arithmetic: on the GPU the correctly rounded intrinsics (__fadd_rn, __fmul_rn, __fdiv_rn and
 * their double forms), which nvcc never contracts into an FMA; on the host plain operators,
 * which x86-64 without -mfma cannot contract either. Both are the CPU kernels' operations.
 * float16 and bfloat16 (T = __half, __nv_bfloat16) are read widened to float32 (exact) and
 * computed in float32; each function returns the wide value (Wide<T>::type), which the kernel
 * rounds once to T (Wide<T>::narrow): the CPU's float32 kernel between its two conversions,
 * bit for bit.
 */
#ifndef TFL_CUDA_POOL_ELEMS_CUH
#define TFL_CUDA_POOL_ELEMS_CUH

#include "cu_launch.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#ifdef __CUDACC__
#define TFLCU_HD __host__ __device__ __forceinline__
#else
#define TFLCU_HD inline
#endif

namespace tflcu_pool_elems
{

#ifdef __CUDA_ARCH__
TFLCU_HD float add_rn(float a, float b)
{
    return __fadd_rn(a, b);
}
TFLCU_HD double add_rn(double a, double b)
{
    return __dadd_rn(a, b);
}
TFLCU_HD float mul_rn(float a, float b)
{
    return __fmul_rn(a, b);
}
TFLCU_HD double mul_rn(double a, double b)
{
    return __dmul_rn(a, b);
}
/* (T)1 / (T)count, correctly rounded, as the CPU's */
TFLCU_HD float inv_count(int64_t count, float)
{
    return __fdiv_rn(1.0f, (float)count);
}
TFLCU_HD double inv_count(int64_t count, double)
{
    return __ddiv_rn(1.0, (double)count);
}
#else
TFLCU_HD float add_rn(float a, float b)
{
    return a + b;
}
TFLCU_HD double add_rn(double a, double b)
{
    return a + b;
}
TFLCU_HD float mul_rn(float a, float b)
{
    return a * b;
}
TFLCU_HD double mul_rn(double a, double b)
{
    return a * b;
}
TFLCU_HD float inv_count(int64_t count, float)
{
    return 1.0f / (float)count;
}
TFLCU_HD double inv_count(int64_t count, double)
{
    return 1.0 / (double)count;
}
#endif

/* the type a stored element is computed in, its widening (exact) and the rounding back */
template <typename T> struct Wide {
    typedef T type;
    static TFLCU_HD T of(T v) { return v; }
    static TFLCU_HD T narrow(T v) { return v; }
};
template <> struct Wide<__half> {
    typedef float type;
    static TFLCU_HD float of(__half v) { return __half2float(v); }
    static TFLCU_HD __half narrow(float v) { return __float2half_rn(v); }
};
template <> struct Wide<__nv_bfloat16> {
    typedef float type;
    static TFLCU_HD float of(__nv_bfloat16 v) { return __bfloat162float(v); }
    static TFLCU_HD __nv_bfloat16 narrow(float v) { return __float2bfloat16_rn(v); }
};

/* output o's window along one axis, clipped to [0, in): [*a, *b) (k_pool.c's window()) */
TFLCU_HD void window(int64_t o, int64_t s, int64_t pad, int64_t k, int64_t in, int64_t *a,
                     int64_t *b)
{
    int64_t start = o * s - pad, end = start + k;
    *a = start > 0 ? start : 0;
    *b = end < in ? end : in;
}

/* the outputs along one axis whose window contains input position i: [*a, *b] (inclusive;
 * empty when *a > *b). Window o covers [o s - pad, o s - pad + k). */
TFLCU_HD void covering(int64_t i, int64_t s, int64_t pad, int64_t k, int64_t out, int64_t *a,
                       int64_t *b)
{
    int64_t lo = i + pad - k + 1; /* o s >= lo */
    *a = lo <= 0 ? 0 : (lo + s - 1) / s;
    int64_t hi = (i + pad) / s; /* i + pad >= 0 */
    *b = hi < out - 1 ? hi : out - 1;
}

/* output element e = ((n, oh), ow, c): its image, channel and clipped window */
struct Win {
    int64_t n, c, oh, ow, hs, he, ws, we;
};
TFLCU_HD Win out_window(const tflcu_pool &g, int64_t e)
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
TFLCU_HD typename Wide<T>::type window_max(const tflcu_pool &g, const T *xn, const Win &w)
{
    typename Wide<T>::type m = Wide<T>::of(xn[(w.hs * g.w + w.ws) * g.c + w.c]);
    for (int64_t ih = w.hs; ih < w.he; ih++)
        for (int64_t iw = ih == w.hs ? w.ws + 1 : w.ws; iw < w.we; iw++) {
            typename Wide<T>::type v = Wide<T>::of(xn[(ih * g.w + iw) * g.c + w.c]);
            m = v > m ? v : m;
        }
    return m;
}

/* the first position (ih W + iw) whose value equals the window's max, or -1 (a NaN max) */
template <typename T> TFLCU_HD int64_t window_argmax(const tflcu_pool &g, const T *xn, const Win &w)
{
    typename Wide<T>::type m = window_max(g, xn, w);
    for (int64_t ih = w.hs; ih < w.he; ih++)
        for (int64_t iw = w.ws; iw < w.we; iw++)
            if (Wide<T>::of(xn[(ih * g.w + iw) * g.c + w.c]) == m) return ih * g.w + iw;
    return -1;
}

/* MaxPool, output element e */
template <typename T>
TFLCU_HD typename Wide<T>::type max_pool_at(const tflcu_pool &g, const T *x, int64_t e)
{
    Win w = out_window(g, e);
    return window_max(g, x + w.n * g.h * g.w * g.c, w);
}

/* AvgPool, output element e: the window's positions summed row-major from 0, times 1/count */
template <typename T>
TFLCU_HD typename Wide<T>::type avg_pool_at(const tflcu_pool &g, const T *x, int64_t e)
{
    typedef typename Wide<T>::type A;
    Win w = out_window(g, e);
    const T *xn = x + w.n * g.h * g.w * g.c;
    A acc = 0;
    for (int64_t ih = w.hs; ih < w.he; ih++)
        for (int64_t iw = w.ws; iw < w.we; iw++)
            acc = add_rn(acc, Wide<T>::of(xn[(ih * g.w + iw) * g.c + w.c]));
    return mul_rn(acc, inv_count((w.he - w.hs) * (w.we - w.ws), A()));
}

/* MaxPoolGradGrad, output element e: gg at the window's argmax of x, 0 where there is none */
template <typename T>
TFLCU_HD typename Wide<T>::type max_pool_grad_grad_at(const tflcu_pool &g, const T *x, const T *gg,
                                                      int64_t e)
{
    Win w = out_window(g, e);
    const int64_t img = w.n * g.h * g.w * g.c;
    int64_t p = window_argmax(g, x + img, w);
    return p >= 0 ? Wide<T>::of(gg[img + p * g.c + w.c]) : (typename Wide<T>::type)0;
}

/* MaxPoolGrad, step 1, output element e: its window's argmax (ih W + iw), or -1 */
template <typename T> TFLCU_HD int64_t argmax_at(const tflcu_pool &g, const T *x, int64_t e)
{
    Win w = out_window(g, e);
    return window_argmax(g, x + w.n * g.h * g.w * g.c, w);
}

/* input element e = ((n, ih), iw, c) and the outputs whose windows contain it */
struct Cover {
    int64_t n, c, ih, iw, oh0, oh1, ow0, ow1;
};
TFLCU_HD Cover in_cover(const tflcu_pool &g, int64_t e)
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

/* MaxPoolGrad, step 2, input element e: the sum of dy over the windows whose argmax (arg, from
 * step 1) e is, in the windows' row-major order, from +0 */
template <typename T>
TFLCU_HD typename Wide<T>::type max_pool_grad_at(const tflcu_pool &g, const int64_t *arg,
                                                 const T *dy, int64_t e)
{
    Cover v = in_cover(g, e);
    const int64_t pos = v.ih * g.w + v.iw;
    typename Wide<T>::type acc = 0;
    for (int64_t oh = v.oh0; oh <= v.oh1; oh++)
        for (int64_t ow = v.ow0; ow <= v.ow1; ow++) {
            int64_t o = ((v.n * g.oh + oh) * g.ow + ow) * g.c + v.c;
            if (arg[o] == pos) acc = add_rn(acc, Wide<T>::of(dy[o]));
        }
    return acc;
}

/* AvgPoolGrad, input element e: the sum of dy * (1 / count) over the windows containing e, in
 * the windows' row-major order, from +0 (each product rounded, then added) */
template <typename T>
TFLCU_HD typename Wide<T>::type avg_pool_grad_at(const tflcu_pool &g, const T *dy, int64_t e)
{
    typedef typename Wide<T>::type A;
    Cover v = in_cover(g, e);
    A acc = 0;
    for (int64_t oh = v.oh0; oh <= v.oh1; oh++) {
        int64_t hs, he;
        window(oh, g.sh, g.pt, g.kh, g.h, &hs, &he);
        for (int64_t ow = v.ow0; ow <= v.ow1; ow++) {
            int64_t ws, we;
            window(ow, g.sw, g.pl, g.kw, g.w, &ws, &we);
            const A inv = inv_count((he - hs) * (we - ws), A());
            acc = add_rn(acc,
                         mul_rn(Wide<T>::of(dy[((v.n * g.oh + oh) * g.ow + ow) * g.c + v.c]), inv));
        }
    }
    return acc;
}

} // namespace tflcu_pool_elems

#endif /* TFL_CUDA_POOL_ELEMS_CUH */
