/*
 * framework/cuda/k_conv.cu: the im2col path of the convolutions (cuda_conv.c is the host
 * side; the GEMMs are cuBLAS). NHWC images, HWIO filters, the geometry of
 * framework/cpu/conv_loops.h; the index arithmetic is conv_index.h's (shared with the host
 * test framework/cuda/tests/test_conv_emulated.c).
 *
 * im2col writes one col element per thread. col2im is a gather: one thread per dx element
 * sums, in a fixed order (i, then j), the col entries that im2col read from that element, so
 * no two threads write one element and the result is the same on every run (no atomics).
 */
#include "conv_index.h"
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
        int64_t src = tflcu_im2col_src(&g, m0, e);
        col[e] = src >= 0 ? x[src] : T(0);
    }
}

/* dx[e] += the dcol entries of the pixels [m0, m1) that im2col read from x[e], e in
 * [e0, e0 + count), added in a fixed order (i, then j) */
template <typename T>
__global__ void col2im_kernel(tflcu_conv g, const T *__restrict__ dcol, int64_t m0, int64_t m1,
                              T *__restrict__ dx, int64_t e0, int64_t count)
{
    TFLCU_LOOP(q, count)
    {
        int64_t e = e0 + q, n, ih, iw, ci;
        tflcu_x_coords(&g, e, &n, &ih, &iw, &ci);
        T s = 0;
        for (int64_t i = 0; i < g.kh; i++)
            for (int64_t j = 0; j < g.kw; j++) {
                int64_t src = tflcu_col2im_src(&g, m0, m1, n, ih, iw, ci, i, j);
                if (src >= 0) s += dcol[src];
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
