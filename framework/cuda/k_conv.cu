/*
 * framework/cuda/k_conv.cu: the im2col path of the convolutions (cuda_conv.c is the host
 * side; the GEMMs are cuBLAS). NHWC images, HWIO filters, the geometry of
 * framework/cpu/conv_loops.h: the im2col matrix has a row per output pixel
 * m = (n OH + oh) OW + ow and a column per filter tap (i, j, ci), KH KW Cin of them in the
 * filter's row-major order; row m holds x[n, oh sh - pt + i dh, ow sw - pl + j dw, ci], 0
 * outside the image.
 *
 * im2col writes one col element per thread. col2im is a gather: one thread per dx element
 * sums, in a fixed order (i, then j), the col entries that im2col read from that element, so
 * no two threads write one element and the result is the same on every run (no atomics).
 */
#include "cu_common.cuh"

namespace
{

template <typename T>
__global__ void im2col_kernel(tflcu_conv g, const T *__restrict__ x, int64_t m0, int64_t rows,
                              T *__restrict__ col)
{
    const int64_t K = g.kh * g.kw * g.c;
    TFLCU_LOOP(e, rows * K)
    {
        int64_t r = e / K, t = e - r * K;
        int64_t ci = t % g.c, ij = t / g.c, j = ij % g.kw, i = ij / g.kw;
        int64_t m = m0 + r, ow = m % g.ow, q = m / g.ow, oh = q % g.oh, n = q / g.oh;
        int64_t ih = oh * g.sh - g.pt + i * g.dh, iw = ow * g.sw - g.pl + j * g.dw;
        T v = 0;
        if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)
            v = x[((n * g.h + ih) * g.w + iw) * g.c + ci];
        col[e] = v;
    }
}

/* dx[e] += the dcol entries of the pixels [m0, m1) that im2col read from x[e], e in
 * [e0, e0 + count) */
template <typename T>
__global__ void col2im_kernel(tflcu_conv g, const T *__restrict__ dcol, int64_t m0, int64_t m1,
                              T *__restrict__ dx, int64_t e0, int64_t count)
{
    const int64_t K = g.kh * g.kw * g.c;
    TFLCU_LOOP(q, count)
    {
        int64_t e = e0 + q;
        int64_t ci = e % g.c, r = e / g.c, iw = r % g.w;
        r /= g.w;
        int64_t ih = r % g.h, n = r / g.h;
        T s = 0;
        for (int64_t i = 0; i < g.kh; i++) {
            int64_t th = ih + g.pt - i * g.dh; /* = oh sh */
            if (th < 0 || th % g.sh) continue;
            int64_t oh = th / g.sh;
            if (oh >= g.oh) continue;
            for (int64_t j = 0; j < g.kw; j++) {
                int64_t tw = iw + g.pl - j * g.dw; /* = ow sw */
                if (tw < 0 || tw % g.sw) continue;
                int64_t ow = tw / g.sw;
                if (ow >= g.ow) continue;
                int64_t m = (n * g.oh + oh) * g.ow + ow;
                if (m < m0 || m >= m1) continue;
                s += dcol[(m - m0) * K + (i * g.kw + j) * g.c + ci];
            }
        }
        dx[e] += s;
    }
}

} // namespace

extern "C" int tflcu_im2col(int dtype, const tflcu_conv *g, const void *x, int64_t m0, int64_t m1,
                            void *col, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    int64_t n = (m1 - m0) * g->kh * g->kw * g->c;
    if (n <= 0) return 0;
    if (dtype == TFL_DTYPE_FLOAT32)
        im2col_kernel<float><<<tflcu_blocks(n), TFLCU_THREADS, 0, s>>>(*g, (const float *)x, m0,
                                                                       m1 - m0, (float *)col);
    else if (dtype == TFL_DTYPE_FLOAT64)
        im2col_kernel<double><<<tflcu_blocks(n), TFLCU_THREADS, 0, s>>>(*g, (const double *)x, m0,
                                                                        m1 - m0, (double *)col);
    else
        return -1;
    return tflcu_status();
}

extern "C" int tflcu_col2im(int dtype, const tflcu_conv *g, const void *dcol, int64_t m0,
                            int64_t m1, void *dx, int64_t e0, int64_t e1, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    int64_t n = e1 - e0;
    if (n <= 0 || m1 <= m0) return 0;
    if (dtype == TFL_DTYPE_FLOAT32)
        col2im_kernel<float><<<tflcu_blocks(n), TFLCU_THREADS, 0, s>>>(*g, (const float *)dcol, m0,
                                                                       m1, (float *)dx, e0, n);
    else if (dtype == TFL_DTYPE_FLOAT64)
        col2im_kernel<double><<<tflcu_blocks(n), TFLCU_THREADS, 0, s>>>(
            *g, (const double *)dcol, m0, m1, (double *)dx, e0, n);
    else
        return -1;
    return tflcu_status();
}
