/*
 * framework/cuda/conv_index.h: the index arithmetic of the im2col path (k_conv.cu), as plain
 * functions of the geometry (cu_launch.h's tflcu_conv) that compile for the device (nvcc) and
 * the host (C), so that a host test (framework/cuda/tests/) checks the same arithmetic the
 * kernels run. The im2col matrix has a row per output pixel m = (n OH + oh) OW + ow and a
 * column per filter tap (i, j, ci), KH KW Cin of them in the filter's row-major order; row m
 * holds x[n, oh sh - pt + i dh, ow sw - pl + j dw, ci], 0 outside the image (as
 * framework/cpu/conv_loops.h).
 */
#ifndef TFL_CUDA_CONV_INDEX_H
#define TFL_CUDA_CONV_INDEX_H

#include "cu_launch.h"

#ifdef __CUDACC__
#define TFLCU_HD __host__ __device__ __forceinline__
#else
#define TFLCU_HD static inline
#endif

/* Element e of the im2col rows of the pixels from m0 on ((m - m0) KH KW Cin + tap): the offset
 * of the x element it holds (NHWC, contiguous), or -1 where the window is in the padding. */
TFLCU_HD int64_t tflcu_im2col_src(const tflcu_conv *g, int64_t m0, int64_t e)
{
    const int64_t K = g->kh * g->kw * g->c;
    int64_t r = e / K, t = e - r * K;
    int64_t ci = t % g->c, ij = t / g->c, j = ij % g->kw, i = ij / g->kw;
    int64_t m = m0 + r, ow = m % g->ow, q = m / g->ow, oh = q % g->oh, n = q / g->oh;
    int64_t ih = oh * g->sh - g->pt + i * g->dh, iw = ow * g->sw - g->pl + j * g->dw;
    if (ih < 0 || ih >= g->h || iw < 0 || iw >= g->w) return -1;
    return ((n * g->h + ih) * g->w + iw) * g->c + ci;
}

/* The coordinates (n, ih, iw, ci) of the x element at NHWC offset e. */
TFLCU_HD void tflcu_x_coords(const tflcu_conv *g, int64_t e, int64_t *n, int64_t *ih, int64_t *iw,
                             int64_t *ci)
{
    int64_t r = e / g->c;
    *ci = e - r * g->c;
    int64_t q = r / g->w;
    *iw = r - q * g->w;
    *n = q / g->h;
    *ih = q - *n * g->h;
}

/* col2im's gather: for the x element (n, ih, iw, ci) and the filter tap row i, column j, the
 * offset in dcol (the im2col rows of the pixels [m0, m1)) of the entry im2col took from that
 * element, or -1 when no pixel of [m0, m1) reads it through that tap. */
TFLCU_HD int64_t tflcu_col2im_src(const tflcu_conv *g, int64_t m0, int64_t m1, int64_t n,
                                  int64_t ih, int64_t iw, int64_t ci, int64_t i, int64_t j)
{
    int64_t th = ih + g->pt - i * g->dh; /* = oh sh */
    int64_t tw = iw + g->pl - j * g->dw; /* = ow sw */
    if (th < 0 || tw < 0 || th % g->sh || tw % g->sw) return -1;
    int64_t oh = th / g->sh, ow = tw / g->sw;
    if (oh >= g->oh || ow >= g->ow) return -1;
    int64_t m = (n * g->oh + oh) * g->ow + ow;
    if (m < m0 || m >= m1) return -1;
    return (m - m0) * (g->kh * g->kw * g->c) + (i * g->kw + j) * g->c + ci;
}

#endif /* TFL_CUDA_CONV_INDEX_H */
