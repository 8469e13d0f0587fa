/*
 * framework/ops/ew_math.h: the scalar function of every elementwise op of op_list.h's
 * TFL_EW_LIST, one per dtype (tfl_ew_<fn>_<sfx>, sfx: b i32 i64 f32 f64 c64 c128), with the
 * derivative tfl_ew_<fn>_d_<sfx> beside the forward of each D/DA op. It compiles as C for
 * the CPU loops (framework/cpu/k_elementwise.c) and as CUDA host/device code for the GPU
 * functors (framework/cuda/k_elementwise.cu), so both devices run one formula. Complex
 * functions are the CPU's only (C99 <complex.h>); the GPU has Conj on float2/double2.
 *
 * float and double come from one body (TFL_EW_FLOATS below): F(exp) is expf or exp, so each
 * dtype computes in its own precision with the C library's function (CUDA's on the GPU).
 * Integer arithmetic wraps (through unsigned), as TensorFlow's kernels do in practice,
 * instead of C's undefined overflow; integer Div is floor division and Pow takes y >= 0
 * (the CPU kernel checks both before it runs).
 */
#ifndef TFL_OPS_EW_MATH_H
#define TFL_OPS_EW_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define TFL_EW __host__ __device__ __forceinline__
#else
#define TFL_EW static inline
#include <complex.h>
#endif

#define TFL_EW_SQRT1_2 0.70710678118654752440  /* 1/sqrt(2) */
#define TFL_EW_SQRT2_PI 0.79788456080286535588 /* sqrt(2/pi) */
#define TFL_EW_INV_SQRT_2PI 0.39894228040143267794 /* 1/sqrt(2 pi) */

/* one line per function keeps each forward beside its derivative */
/* clang-format off */

/* ---- bool (uint8_t 0/1) ---- */

TFL_EW uint8_t tfl_ew_equal_b(uint8_t x, uint8_t y) { return x == y; }
TFL_EW uint8_t tfl_ew_not_equal_b(uint8_t x, uint8_t y) { return x != y; }
TFL_EW uint8_t tfl_ew_logical_and_b(uint8_t x, uint8_t y) { return (uint8_t)(x && y); }
TFL_EW uint8_t tfl_ew_logical_or_b(uint8_t x, uint8_t y) { return (uint8_t)(x || y); }
TFL_EW uint8_t tfl_ew_logical_not_b(uint8_t x) { return (uint8_t)!x; }

/* ---- comparisons, every real dtype ---- */

#define TFL_EW_COMPARE(T, S)                                                                       \
    TFL_EW uint8_t tfl_ew_equal_##S(T x, T y) { return x == y; }                                   \
    TFL_EW uint8_t tfl_ew_not_equal_##S(T x, T y) { return x != y; }                               \
    TFL_EW uint8_t tfl_ew_less_##S(T x, T y) { return x < y; }                                     \
    TFL_EW uint8_t tfl_ew_less_equal_##S(T x, T y) { return x <= y; }                              \
    TFL_EW uint8_t tfl_ew_greater_##S(T x, T y) { return x > y; }                                  \
    TFL_EW uint8_t tfl_ew_greater_equal_##S(T x, T y) { return x >= y; }

/* ---- integers: wrapping arithmetic, floor division, powers ---- */

#define TFL_EW_INTS(T, U, S)                                                                       \
    TFL_EW T tfl_ew_add_##S(T x, T y) { return (T)((U)x + (U)y); }                                 \
    TFL_EW T tfl_ew_sub_##S(T x, T y) { return (T)((U)x - (U)y); }                                 \
    TFL_EW T tfl_ew_mul_##S(T x, T y) { return (T)((U)x * (U)y); }                                 \
    TFL_EW T tfl_ew_neg_##S(T x) { return (T)((U)0 - (U)x); }                                      \
    TFL_EW T tfl_ew_abs_##S(T x) { return x < 0 ? tfl_ew_neg_##S(x) : x; }                         \
    TFL_EW T tfl_ew_div_##S(T x, T y) /* y != 0 (checked before) */                                \
    {                                                                                              \
        if (y == -1) return tfl_ew_neg_##S(x);                                                     \
        T q = x / y;                                                                               \
        return (x % y != 0 && ((x < 0) != (y < 0))) ? (T)(q - 1) : q;                              \
    }                                                                                              \
    TFL_EW T tfl_ew_pow_##S(T x, T y) /* y >= 0 (checked before) */                                \
    {                                                                                              \
        U r = 1, b = (U)x;                                                                         \
        for (; y > 0; y >>= 1) {                                                                   \
            if (y & 1) r *= b;                                                                     \
            b *= b;                                                                                \
        }                                                                                          \
        return (T)r;                                                                               \
    }                                                                                              \
    TFL_EW T tfl_ew_maximum_##S(T x, T y) { return x > y ? x : y; }                                \
    TFL_EW T tfl_ew_minimum_##S(T x, T y) { return x < y ? x : y; }                                \
    TFL_EW T tfl_ew_sign_##S(T x) { return (T)(x > 0) - (T)(x < 0); }                              \
    TFL_EW_COMPARE(T, S)

TFL_EW_INTS(int32_t, uint32_t, i32)
TFL_EW_INTS(int64_t, uint64_t, i64)

/* ---- GELU's erf and exp in float32 ---- */
/*
 * Straight-line arithmetic and plain selects (no libm call, no || or &&: gcc -fopt-info-vec
 * shows whether the loops still vectorize), so the CPU's GELU loops vectorize and the GPU runs
 * the same formula. float64 keeps libm's erf and exp.
 *
 * erf(x) = x P(x^2) / Q(x^2) for |x| < 4, a rational fit of erf(x)/x on x^2 in [0, 16]
 * (tests/reference/fit_erf.py: 2.5e-8 relative before rounding, within 6 ulp of erf in float32
 * arithmetic, so within 3.6e-7 absolute); +-1 from 4 on, where erf rounds to +-1 in float32,
 * and never past +-1. NaN stays NaN.
 */
TFL_EW float tfl_ew_gelu_erf_f32(float x)
{
    const float c = x < -4.0f ? -4.0f : x > 4.0f ? 4.0f : x, s = c * c;
    const float p = ((((1.98652902e-06f * s + 2.84514454e-04f) * s + 3.88242436e-03f) * s +
                      5.30988798e-02f) * s + 1.93528001e-01f) * s + 1.12837914f;
    const float q = ((((3.74148120e-05f * s + 1.18528890e-03f) * s + 1.52054609e-02f) * s +
                      1.15342390e-01f) * s + 5.04842289e-01f) * s + 1.0f;
    float r = c * p / q;
    r = r > 1.0f ? 1.0f : r; /* it may pass +-1 by a few ulps near 4 */
    r = r < -1.0f ? -1.0f : r;
    return x >= 4.0f ? 1.0f : x <= -4.0f ? -1.0f : r;
}
/*
 * e^t for t <= 0: 2^n e^r, n = t log2(e) rounded to nearest (by adding and subtracting
 * 1.5 2^23), r = t - n ln2 in two parts (|r| <= ln2 / 2), e^r by its Taylor polynomial of
 * degree 7 (truncation below 5e-9 relative), 2^n made from its exponent bits. 0 below -87,
 * where e^t is under float32's smallest normal; NaN for NaN.
 */
TFL_EW float tfl_ew_gelu_exp_f32(float t)
{
    const float tc = t < -87.0f ? -87.0f : t;
    const float n = (tc * 1.44269504f + 12582912.0f) - 12582912.0f;
    const float r = (tc - n * 0.693145752f) - n * 1.42860677e-06f;
    const float e = ((((((1.98412698e-04f * r + 1.38888889e-03f) * r + 8.33333333e-03f) * r +
                        4.16666667e-02f) * r + 1.66666667e-01f) * r + 0.5f) * r + 1.0f) * r +
                    1.0f;
    /* (n + 127) << 23, n in [-126, 0]; clamped so that any t is defined (a NaN t gives NaN
     * through e anyway) */
    const float nb = n >= -126.0f ? (n <= 127.0f ? n : 127.0f) : -126.0f;
    const int32_t bits = ((int32_t)nb + 127) * 8388608;
    float two_n;
    memcpy(&two_n, &bits, sizeof two_n);
    return t < -87.0f ? 0.0f : e * two_n;
}
TFL_EW double tfl_ew_gelu_erf_f64(double x) { return erf(x); }
TFL_EW double tfl_ew_gelu_exp_f64(double t) { return exp(t); }

/* ---- float32 and float64 from one body: F(f) names the dtype's libm function ---- */

#define TFL_EW_F32(name) name##f
#define TFL_EW_F64(name) name

#define TFL_EW_FLOATS(T, S, F)                                                                     \
    TFL_EW T tfl_ew_add_##S(T x, T y) { return x + y; }                                            \
    TFL_EW T tfl_ew_sub_##S(T x, T y) { return x - y; }                                            \
    TFL_EW T tfl_ew_mul_##S(T x, T y) { return x * y; }                                            \
    TFL_EW T tfl_ew_div_##S(T x, T y) { return x / y; }                                            \
    TFL_EW T tfl_ew_pow_##S(T x, T y) { return F(pow)(x, y); }                                     \
    /* NaN propagates (TensorFlow's Maximum/Minimum) */                                            \
    TFL_EW T tfl_ew_maximum_##S(T x, T y) { return (x > y || x != x) ? x : y; }                    \
    TFL_EW T tfl_ew_minimum_##S(T x, T y) { return (x < y || x != x) ? x : y; }                    \
    TFL_EW T tfl_ew_neg_##S(T x) { return -x; }                                                    \
    TFL_EW T tfl_ew_exp_##S(T x) { return F(exp)(x); }                                             \
    TFL_EW T tfl_ew_log_##S(T x) { return F(log)(x); }                                             \
    TFL_EW T tfl_ew_sqrt_##S(T x) { return F(sqrt)(x); }                                           \
    TFL_EW T tfl_ew_abs_##S(T x) { return F(fabs)(x); }                                            \
    TFL_EW T tfl_ew_erf_##S(T x) { return F(erf)(x); }                                             \
    /* -0 and NaN stay */                                                                          \
    TFL_EW T tfl_ew_sign_##S(T x) { return x > 0 ? (T)1 : x < 0 ? (T)-1 : x; }                     \
    TFL_EW_COMPARE(T, S)                                                                           \
    /* ---- activations ---- */                                                                    \
    TFL_EW T tfl_ew_relu_##S(T x) { return x < (T)0 ? (T)0 : x; }                                  \
    /* ReluGrad(dy, features) */                                                                   \
    TFL_EW T tfl_ew_relu_grad_##S(T dy, T y) { return y > (T)0 ? dy : (T)0; }                      \
    TFL_EW T tfl_ew_leaky_relu_##S(T x, double a) { return x > (T)0 ? x : (T)a * x; }              \
    /* split on the sign so that exp never overflows */                                            \
    TFL_EW T tfl_ew_sigmoid_##S(T x)                                                               \
    {                                                                                              \
        if (x >= 0) return (T)1 / ((T)1 + F(exp)(-x));                                             \
        T e = F(exp)(x);                                                                           \
        return e / ((T)1 + e);                                                                     \
    }                                                                                              \
    TFL_EW T tfl_ew_tanh_##S(T x) { return F(tanh)(x); }                                           \
    /* a != 0: the tanh approximation; a == 0: exact, x Phi(x) */                                  \
    TFL_EW T tfl_ew_gelu_##S(T x, double a)                                                        \
    {                                                                                              \
        if (a != 0.0)                                                                              \
            return (T)0.5 * x *                                                                    \
                   ((T)1 + F(tanh)((T)TFL_EW_SQRT2_PI * (x + (T)0.044715 * x * x * x)));           \
        return (T)0.5 * x * ((T)1 + tfl_ew_gelu_erf_##S(x * (T)TFL_EW_SQRT1_2));                   \
    }                                                                                              \
    /* exact: Phi(x) + x phi(x); tanh form, u = c (x + k x^3), t = tanh u:                         \
     * (1 + t) / 2 + x (1 - t^2) c (1 + 3 k x^2) / 2 */                                            \
    TFL_EW T tfl_ew_gelu_d_##S(T x, double a)                                                      \
    {                                                                                              \
        if (a != 0.0) {                                                                            \
            const T x2 = x * x;                                                                    \
            const T t = F(tanh)((T)TFL_EW_SQRT2_PI * (x + (T)0.044715 * x2 * x));                  \
            const T du = (T)TFL_EW_SQRT2_PI * ((T)1 + (T)(3 * 0.044715) * x2);                     \
            return (T)0.5 * ((T)1 + t) + (T)0.5 * x * ((T)1 - t * t) * du;                         \
        }                                                                                          \
        return (T)0.5 * ((T)1 + tfl_ew_gelu_erf_##S(x * (T)TFL_EW_SQRT1_2)) +                      \
               x * (T)TFL_EW_INV_SQRT_2PI * tfl_ew_gelu_exp_##S((T)-0.5 * x * x);                  \
    }                                                                                              \
    /* sigmoid cross-entropy of logit x and label y: max(x, 0) - x y + log(1 + e^-|x|) */          \
    TFL_EW T tfl_ew_sigmoid_xent_##S(T x, T y)                                                     \
    {                                                                                              \
        return (x > 0 ? x : (T)0) - x * y + F(log1p)(F(exp)(-F(fabs)(x)));                         \
    }                                                                                              \
    /* softplus log(1 + e^x) as max(x, 0) + log1p(e^-|x|): no overflow, no threshold */           \
    TFL_EW T tfl_ew_softplus_##S(T x)                                                              \
    {                                                                                              \
        return (x > 0 ? x : (T)0) + F(log1p)(F(exp)(-F(fabs)(x)));                                 \
    }                                                                                              \
    TFL_EW T tfl_ew_softplus_d_##S(T x) { return tfl_ew_sigmoid_##S(x); }                          \
    /* SiLU (swish) x sigmoid(x); (x s)' = s (1 + x (1 - s)) */                                    \
    TFL_EW T tfl_ew_silu_##S(T x) { return x * tfl_ew_sigmoid_##S(x); }                            \
    TFL_EW T tfl_ew_silu_d_##S(T x)                                                                \
    {                                                                                              \
        T s = tfl_ew_sigmoid_##S(x);                                                               \
        return s * ((T)1 + x * ((T)1 - s));                                                        \
    }                                                                                              \
    /* ELU: x if x > 0 else a (e^x - 1), through expm1; the derivative at 0 is a */                \
    TFL_EW T tfl_ew_elu_##S(T x, double a) { return x > (T)0 ? x : (T)a * F(expm1)(x); }           \
    TFL_EW T tfl_ew_elu_d_##S(T x, double a) { return x > (T)0 ? (T)1 : (T)a * F(exp)(x); }        \
    /* relu6(x + 3) / 6 (NaN stays); slope 1/6 strictly inside (-3, 3), else 0 */                  \
    TFL_EW T tfl_ew_hard_sigmoid_##S(T x)                                                          \
    {                                                                                              \
        T t = x + (T)3;                                                                            \
        t = t < (T)0 ? (T)0 : t;                                                                   \
        return (t > (T)6 ? (T)6 : t) / (T)6;                                                       \
    }                                                                                              \
    TFL_EW T tfl_ew_hard_sigmoid_d_##S(T x) { return x > (T)-3 && x < (T)3 ? (T)1 / 6 : (T)0; }

TFL_EW_FLOATS(float, f32, TFL_EW_F32)
TFL_EW_FLOATS(double, f64, TFL_EW_F64)

/* ---- complex ---- */

#ifdef __CUDACC__
TFL_EW float2 tfl_ew_conj_c64(float2 x) { return make_float2(x.x, -x.y); }
TFL_EW double2 tfl_ew_conj_c128(double2 x) { return make_double2(x.x, -x.y); }
#else
/* C: float complex and double complex; R is the real dtype (Abs's output) */
#define TFL_EW_COMPLEX(T, R, S, F)                                                                 \
    TFL_EW T tfl_ew_add_##S(T x, T y) { return x + y; }                                            \
    TFL_EW T tfl_ew_sub_##S(T x, T y) { return x - y; }                                            \
    TFL_EW T tfl_ew_mul_##S(T x, T y) { return x * y; }                                            \
    TFL_EW T tfl_ew_div_##S(T x, T y) { return x / y; }                                            \
    TFL_EW T tfl_ew_pow_##S(T x, T y) { return F(cpow)(x, y); }                                    \
    TFL_EW T tfl_ew_neg_##S(T x) { return -x; }                                                    \
    TFL_EW T tfl_ew_exp_##S(T x) { return F(cexp)(x); }                                            \
    TFL_EW T tfl_ew_log_##S(T x) { return F(clog)(x); }                                            \
    TFL_EW T tfl_ew_sqrt_##S(T x) { return F(csqrt)(x); }                                          \
    TFL_EW R tfl_ew_abs_##S(T x) { return F(cabs)(x); }                                            \
    /* x / |x|, 0 at 0 */                                                                          \
    TFL_EW T tfl_ew_sign_##S(T x) { return x == 0 ? x : x / F(cabs)(x); }                          \
    TFL_EW T tfl_ew_conj_##S(T x) { return F(conj)(x); }                                           \
    TFL_EW uint8_t tfl_ew_equal_##S(T x, T y) { return x == y; }                                   \
    TFL_EW uint8_t tfl_ew_not_equal_##S(T x, T y) { return x != y; }

TFL_EW_COMPLEX(float complex, float, c64, TFL_EW_F32)
TFL_EW_COMPLEX(double complex, double, c128, TFL_EW_F64)
#endif

/* clang-format on */

#endif /* TFL_OPS_EW_MATH_H */
