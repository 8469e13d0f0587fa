/*
 * framework/cuda/k_pool.cu: MaxPool, AvgPool, MaxPoolGrad, MaxPoolGradGrad and AvgPoolGrad on
 * NHWC images, float32 and float64, and float16 and bfloat16 computed in float32 and rounded
 * once (the host side is cuda_pool.c). The semantics are the CPU's (framework/cpu/k_pool.c,
 * pool_loops.h; for 16 bits its float32 kernel between two conversions), operation for
 * operation:
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
 * The per-element code is in pool_elems.cuh (compiled for the host too, where
 * framework/cuda/tests/test_pool_elems.cu checks it against the CPU's kernels, bit for bit).
 * Multiplications and additions are the correctly rounded intrinsics (__fmul_rn, __fadd_rn,
 * ...), which nvcc never contracts into an FMA, and the reciprocal a correctly rounded
 * division, so the results should be the CPU's bit for bit (the CPU is compiled as ISO C11,
 * where GCC does not contract either). The one known difference, invisible to a comparison
 * by value: where windows do not overlap (strides >= window), the CPU's vectorized channels
 * store dy at the argmax, so a dy of -0.0 stays -0.0 there, while its scalar tail channels and
 * this gather add it to +0.0 (giving +0.0). No tolerance is implied: test_backend_ops's
 * float32 (1e-5) and float64 (1e-12) tolerances only leave room for other kernels.
 *
 * MaxPoolGrad's temporary (cuda_pool.c): each window's argmax as int64, pooled-numel of them.
 */
#include "cu_common.cuh"
#include "pool_elems.cuh"

namespace
{

using namespace tflcu_pool_elems;

template <typename T> __global__ void max_pool_kernel(tflcu_pool g, const T *x, T *y, int64_t n)
{
    TFLCU_LOOP(e, n) y[e] = Wide<T>::narrow(max_pool_at(g, x, e));
}

template <typename T> __global__ void avg_pool_kernel(tflcu_pool g, const T *x, T *y, int64_t n)
{
    TFLCU_LOOP(e, n) y[e] = Wide<T>::narrow(avg_pool_at(g, x, e));
}

template <typename T>
__global__ void max_pool_grad_grad_kernel(tflcu_pool g, const T *x, const T *gg, T *y, int64_t n)
{
    TFLCU_LOOP(e, n) y[e] = Wide<T>::narrow(max_pool_grad_grad_at(g, x, gg, e));
}

/* MaxPoolGrad, step 1: arg[e] = the argmax of output element e's window, or -1 */
template <typename T>
__global__ void argmax_kernel(tflcu_pool g, const T *x, int64_t *arg, int64_t n)
{
    TFLCU_LOOP(e, n) arg[e] = argmax_at(g, x, e);
}

/* MaxPoolGrad, step 2: dx gathered over the windows whose argmax each element is */
template <typename T>
__global__ void max_pool_grad_kernel(tflcu_pool g, const int64_t *arg, const T *dy, T *dx,
                                     int64_t n)
{
    TFLCU_LOOP(e, n) dx[e] = Wide<T>::narrow(max_pool_grad_at(g, arg, dy, e));
}

template <typename T>
__global__ void avg_pool_grad_kernel(tflcu_pool g, const T *dy, T *dx, int64_t n)
{
    TFLCU_LOOP(e, n) dx[e] = Wide<T>::narrow(avg_pool_grad_at(g, dy, e));
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
    if (dtype == TFL_DTYPE_FLOAT16) return pool_run<__half>(op, g, x, x2, y, arg, s);
    if (dtype == TFL_DTYPE_BFLOAT16) return pool_run<__nv_bfloat16>(op, g, x, x2, y, arg, s);
    return -1;
}
