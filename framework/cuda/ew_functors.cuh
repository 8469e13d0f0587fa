/*
 * framework/cuda/ew_functors.cuh: the functors of the elementwise ops, one per line of
 * framework/ops/op_list.h's TFL_EW_LIST (two for an activation with a derivative: F_<fn> and
 * F_<fn>_grad, dy * f'(x)), generated around the scalar functions of framework/ops/ew_math.h.
 * Each has an operator() per dtype of the line's `gpu` set, callable on the host and the
 * device: k_elementwise.cu launches them, and tests/test_ew_functors.cu (this folder) runs
 * them on the host against the CPU's kernels, bit for bit. A is the op's scalar attribute.
 * Half<H, F> runs a functor on float16 or bfloat16 (H) through its float32 overload, as the
 * CPU runs those dtypes: the inputs widened (exact), the float32 formula, the result rounded
 * once to nearest even, so both devices agree bit for bit.
 */
#ifndef TFL_CUDA_EW_FUNCTORS_CUH
#define TFL_CUDA_EW_FUNCTORS_CUH

#include "ops/ew_math.h"
#include "ops/op_list.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

/* the dtypes of each `gpu` set: L(p, q, DTYPE, C type, sfx) for each, p and q passed through */
#define GSET_R(L, p, q)                                                                            \
    L(p, q, INT32, int32_t, i32)                                                                   \
    L(p, q, INT64, int64_t, i64) L(p, q, FLOAT32, float, f32) L(p, q, FLOAT64, double, f64)
#define GSET_F(L, p, q) L(p, q, FLOAT32, float, f32) L(p, q, FLOAT64, double, f64)
#define GSET_RB(L, p, q) L(p, q, BOOL, uint8_t, b) GSET_R(L, p, q)
#define GSET_B(L, p, q) L(p, q, BOOL, uint8_t, b)
#define GSET_C(L, p, q) L(p, q, COMPLEX64, float2, c64) L(p, q, COMPLEX128, double2, c128)
#define GSET_NONE(L, p, q)

namespace tflcu_ew
{

#define OV_U(fn, unused, DT, T, S)                                                                 \
    __host__ __device__ __forceinline__ auto operator()(T x) const                                 \
    {                                                                                              \
        return tfl_ew_##fn##_##S(x);                                                               \
    }
#define OV_UA(fn, unused, DT, T, S)                                                                \
    __host__ __device__ __forceinline__ auto operator()(T x) const                                 \
    {                                                                                              \
        return tfl_ew_##fn##_##S(x, A);                                                            \
    }
#define OV_B(fn, unused, DT, T, S)                                                                 \
    __host__ __device__ __forceinline__ auto operator()(T x, T y) const                            \
    {                                                                                              \
        return tfl_ew_##fn##_##S(x, y);                                                            \
    }
/* the gradient op: dy * f'(x) */
#define OV_G(fn, unused, DT, T, S)                                                                 \
    __host__ __device__ __forceinline__ T operator()(T dy, T x) const                              \
    {                                                                                              \
        return dy * tfl_ew_##fn##_d_##S(x);                                                        \
    }
#define OV_GA(fn, unused, DT, T, S)                                                                \
    __host__ __device__ __forceinline__ T operator()(T dy, T x) const                              \
    {                                                                                              \
        return dy * tfl_ew_##fn##_d_##S(x, A);                                                     \
    }
#define FUNCTOR_(name, fn, OV, gpu)                                                                \
    struct name {                                                                                  \
        double A;                                                                                  \
        GSET_##gpu(OV, fn, ~)                                                                      \
    };
#define FUNCTORS_U(fn, gpu) FUNCTOR_(F_##fn, fn, OV_U, gpu)
#define FUNCTORS_UA(fn, gpu) FUNCTOR_(F_##fn, fn, OV_UA, gpu)
#define FUNCTORS_B(fn, gpu) FUNCTOR_(F_##fn, fn, OV_B, gpu)
#define FUNCTORS_D(fn, gpu) FUNCTOR_(F_##fn, fn, OV_U, gpu) FUNCTOR_(F_##fn##_grad, fn, OV_G, gpu)
#define FUNCTORS_DA(fn, gpu)                                                                       \
    FUNCTOR_(F_##fn, fn, OV_UA, gpu) FUNCTOR_(F_##fn##_grad, fn, OV_GA, gpu)
#define FUNCTORS_(ctx, id, nm, fn, kind, out, cpu, gpu, api, saves) FUNCTORS_##kind(fn, gpu)
TFL_EW_LIST(FUNCTORS_, ~)

/* the 16-bit dtypes widened to float32 and a float32 result rounded back (a comparison's
 * uint8_t result stays as it is) */
__host__ __device__ __forceinline__ float widen(__half x) { return __half2float(x); }
__host__ __device__ __forceinline__ float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename H> struct narrow;
template <> struct narrow<__half> {
    __host__ __device__ static __half of(float v) { return __float2half_rn(v); }
    __host__ __device__ static uint8_t of(uint8_t b) { return b; }
};
template <> struct narrow<__nv_bfloat16> {
    __host__ __device__ static __nv_bfloat16 of(float v) { return __float2bfloat16_rn(v); }
    __host__ __device__ static uint8_t of(uint8_t b) { return b; }
};

template <typename H, typename F> struct Half {
    F f;
    __host__ __device__ __forceinline__ auto operator()(H x) const
    {
        return narrow<H>::of(f(widen(x)));
    }
    __host__ __device__ __forceinline__ auto operator()(H x, H y) const
    {
        return narrow<H>::of(f(widen(x), widen(y)));
    }
};

} // namespace tflcu_ew

#endif /* TFL_CUDA_EW_FUNCTORS_CUH */
