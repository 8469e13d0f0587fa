/*
 * framework/cuda/k_elementwise.cu: elementwise kernels (unary, binary, comparisons, logical),
 * Cast, strided copies, select (SelectV2) and fills. One grid-stride kernel template per
 * arity; each op is a functor with the CPU's formula (framework/cpu/k_elementwise.c): integer
 * arithmetic wraps (done in unsigned), Maximum/Minimum propagate NaN, sigmoid splits on the
 * sign, Gelu has the erf and tanh forms. Broadcasting and views come in the strides.
 */
#include "cu_common.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace
{

template <typename T> struct U_of {
    typedef T type;
};
template <> struct U_of<int32_t> {
    typedef uint32_t type;
};
template <> struct U_of<int64_t> {
    typedef uint64_t type;
};

template <typename T> __device__ __forceinline__ bool is_nan(T x)
{
    return x != x;
}

/* ---- functors: T operator()(T x[, T y]) const, alpha in the functor ---- */
#define F_BIN(NAME, EXPR)                                                                          \
    struct NAME {                                                                                  \
        template <typename T> __device__ __forceinline__ T operator()(T x, T y) const              \
        {                                                                                          \
            return (EXPR);                                                                         \
        }                                                                                          \
    };
#define F_CMP(NAME, EXPR)                                                                          \
    struct NAME {                                                                                  \
        template <typename T> __device__ __forceinline__ uint8_t operator()(T x, T y) const        \
        {                                                                                          \
            return (uint8_t)(EXPR);                                                                \
        }                                                                                          \
    };
#define F_UN(NAME, EXPR)                                                                           \
    struct NAME {                                                                                  \
        double A;                                                                                  \
        template <typename T> __device__ __forceinline__ T operator()(T x) const                   \
        {                                                                                          \
            return (EXPR);                                                                         \
        }                                                                                          \
    };

template <typename T> __device__ __forceinline__ T wadd(T x, T y)
{
    typedef typename U_of<T>::type U;
    return (T)((U)x + (U)y);
}
template <typename T> __device__ __forceinline__ T wsub(T x, T y)
{
    typedef typename U_of<T>::type U;
    return (T)((U)x - (U)y);
}
template <typename T> __device__ __forceinline__ T wmul(T x, T y)
{
    typedef typename U_of<T>::type U;
    return (T)((U)x * (U)y);
}
template <typename T> __device__ __forceinline__ T wneg(T x)
{
    typedef typename U_of<T>::type U;
    return (T)((U)0 - (U)x);
}
/* |x|: integers wrap as the CPU's (|INT_MIN| = INT_MIN); floats clear the sign bit, as the
 * CPU's fabs does, so |-0.0| is +0.0 (x < 0 ? -x : x would keep -0.0) */
template <typename T> __device__ __forceinline__ T wabs(T x) { return x < (T)0 ? wneg(x) : x; }
template <> __device__ __forceinline__ float wabs<float>(float x) { return fabsf(x); }
template <> __device__ __forceinline__ double wabs<double>(double x) { return fabs(x); }

F_BIN(AddF, wadd(x, y))
F_BIN(SubF, wsub(x, y))
F_BIN(MulF, wmul(x, y))
F_BIN(DivF, x / y) /* floats only on the GPU (integer division checks stay on the CPU) */
F_BIN(PowF, (T)pow((double)x, (double)y))
F_BIN(MaxF, ((x > y || is_nan(x)) ? x : y))
F_BIN(MinF, ((x < y || is_nan(x)) ? x : y))
F_BIN(ReluGradF, (y > (T)0 ? x : (T)0))
F_BIN(SigmoidXentF, ((x > (T)0 ? x : (T)0) - x * y + (T)log1p(exp(-fabs((double)x)))))
F_CMP(EqF, x == y)
F_CMP(NeF, x != y)
F_CMP(LtF, x < y)
F_CMP(LeF, x <= y)
F_CMP(GtF, x > y)
F_CMP(GeF, x >= y)
F_CMP(AndF, x &&y)
F_CMP(OrF, x || y)

F_UN(NegF, wneg(x))
F_UN(AbsF, wabs(x))
F_UN(ExpF, exp(x))
F_UN(LogF, log(x))
F_UN(SqrtF, sqrt(x))
F_UN(ErfF, erf(x))
F_UN(SignF, (x > (T)0 ? (T)1 : x < (T)0 ? (T)-1 : x))
F_UN(ReluF, (x < (T)0 ? (T)0 : x))
F_UN(LeakyF, (x > (T)0 ? x : (T)A * x))
F_UN(SigmoidF, (x >= (T)0 ? (T)1 / ((T)1 + exp(-x)) : exp(x) / ((T)1 + exp(x))))
F_UN(TanhF, tanh(x))
F_UN(GeluF, (A != 0.0 ? (T)0.5 * x *
                            ((T)1 + tanh((T)0.79788456080286535588 * (x + (T)0.044715 * x * x * x)))
                      : (T)0.5 * x * ((T)1 + erf(x * (T)0.70710678118654752440))))
struct ConjF {
    double A;
    __device__ __forceinline__ float2 operator()(float2 x) const { return make_float2(x.x, -x.y); }
    __device__ __forceinline__ double2 operator()(double2 x) const
    {
        return make_double2(x.x, -x.y);
    }
};
struct NotF {
    double A;
    __device__ __forceinline__ uint8_t operator()(uint8_t x) const { return (uint8_t)!x; }
};

template <typename TI, typename TO, typename F>
__global__ void un_kernel(tflcu_iter it, bool contig, F f)
{
    TO *o = (TO *)it.ptr[0];
    const TI *a = (const TI *)it.ptr[1];
    if (contig) {
        TFLCU_LOOP(i, it.numel) o[i] = f(a[i]);
    } else {
        TFLCU_LOOP(i, it.numel) o[tflcu_offset(it, 0, i)] = f(a[tflcu_offset(it, 1, i)]);
    }
}

template <typename TI, typename TO, typename F>
__global__ void bin_kernel(tflcu_iter it, bool contig, F f)
{
    TO *o = (TO *)it.ptr[0];
    const TI *a = (const TI *)it.ptr[1], *b = (const TI *)it.ptr[2];
    if (contig) {
        TFLCU_LOOP(i, it.numel) o[i] = f(a[i], b[i]);
    } else {
        TFLCU_LOOP(i, it.numel)
        o[tflcu_offset(it, 0, i)] = f(a[tflcu_offset(it, 1, i)], b[tflcu_offset(it, 2, i)]);
    }
}

template <typename TI, typename TO, typename F> int un(const tflcu_iter *it, F f, cudaStream_t s)
{
    un_kernel<TI, TO, F>
        <<<tflcu_blocks(it->numel), TFLCU_THREADS, 0, s>>>(*it, tflcu_contiguous(it), f);
    return tflcu_status();
}

template <typename TI, typename TO, typename F> int bin(const tflcu_iter *it, F f, cudaStream_t s)
{
    bin_kernel<TI, TO, F>
        <<<tflcu_blocks(it->numel), TFLCU_THREADS, 0, s>>>(*it, tflcu_contiguous(it), f);
    return tflcu_status();
}

/* dtype dispatch: which dtypes each family runs */
template <typename F> int bin_real(int dt, const tflcu_iter *it, F f, cudaStream_t s)
{
    switch (dt) {
    case TFL_DTYPE_INT32:
        return bin<int32_t, int32_t>(it, f, s);
    case TFL_DTYPE_INT64:
        return bin<int64_t, int64_t>(it, f, s);
    case TFL_DTYPE_FLOAT32:
        return bin<float, float>(it, f, s);
    case TFL_DTYPE_FLOAT64:
        return bin<double, double>(it, f, s);
    default:
        return -1;
    }
}
template <typename F> int bin_float(int dt, const tflcu_iter *it, F f, cudaStream_t s)
{
    if (dt == TFL_DTYPE_FLOAT32) return bin<float, float>(it, f, s);
    if (dt == TFL_DTYPE_FLOAT64) return bin<double, double>(it, f, s);
    return -1;
}
template <typename F> int cmp_all(int dt, const tflcu_iter *it, F f, cudaStream_t s)
{
    switch (dt) {
    case TFL_DTYPE_BOOL:
        return bin<uint8_t, uint8_t>(it, f, s);
    case TFL_DTYPE_INT32:
        return bin<int32_t, uint8_t>(it, f, s);
    case TFL_DTYPE_INT64:
        return bin<int64_t, uint8_t>(it, f, s);
    case TFL_DTYPE_FLOAT32:
        return bin<float, uint8_t>(it, f, s);
    case TFL_DTYPE_FLOAT64:
        return bin<double, uint8_t>(it, f, s);
    default:
        return -1;
    }
}
template <typename F> int un_real(int dt, const tflcu_iter *it, F f, cudaStream_t s)
{
    switch (dt) {
    case TFL_DTYPE_INT32:
        return un<int32_t, int32_t>(it, f, s);
    case TFL_DTYPE_INT64:
        return un<int64_t, int64_t>(it, f, s);
    case TFL_DTYPE_FLOAT32:
        return un<float, float>(it, f, s);
    case TFL_DTYPE_FLOAT64:
        return un<double, double>(it, f, s);
    default:
        return -1;
    }
}
template <typename F> int un_float(int dt, const tflcu_iter *it, F f, cudaStream_t s)
{
    if (dt == TFL_DTYPE_FLOAT32) return un<float, float>(it, f, s);
    if (dt == TFL_DTYPE_FLOAT64) return un<double, double>(it, f, s);
    return -1;
}

} // namespace

extern "C" int tflcu_elementwise(int op, int dt, const tflcu_iter *it, double alpha, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (it->numel == 0) return 0;
    switch (op) {
    case TFL_OP_ADD:
        return bin_real(dt, it, AddF(), s);
    case TFL_OP_SUB:
        return bin_real(dt, it, SubF(), s);
    case TFL_OP_MUL:
        return bin_real(dt, it, MulF(), s);
    case TFL_OP_DIV:
        return bin_float(dt, it, DivF(), s);
    case TFL_OP_POW:
        return bin_float(dt, it, PowF(), s);
    case TFL_OP_MAXIMUM:
        return bin_real(dt, it, MaxF(), s);
    case TFL_OP_MINIMUM:
        return bin_real(dt, it, MinF(), s);
    case TFL_OP_RELU_GRAD:
        return bin_float(dt, it, ReluGradF(), s);
    case TFL_OP_SIGMOID_XENT:
        return bin_float(dt, it, SigmoidXentF(), s);
    case TFL_OP_EQUAL:
        return cmp_all(dt, it, EqF(), s);
    case TFL_OP_NOT_EQUAL:
        return cmp_all(dt, it, NeF(), s);
    case TFL_OP_LESS:
        return dt == TFL_DTYPE_BOOL ? -1 : cmp_all(dt, it, LtF(), s);
    case TFL_OP_LESS_EQUAL:
        return dt == TFL_DTYPE_BOOL ? -1 : cmp_all(dt, it, LeF(), s);
    case TFL_OP_GREATER:
        return dt == TFL_DTYPE_BOOL ? -1 : cmp_all(dt, it, GtF(), s);
    case TFL_OP_GREATER_EQUAL:
        return dt == TFL_DTYPE_BOOL ? -1 : cmp_all(dt, it, GeF(), s);
    case TFL_OP_LOGICAL_AND:
        return dt == TFL_DTYPE_BOOL ? bin<uint8_t, uint8_t>(it, AndF(), s) : -1;
    case TFL_OP_LOGICAL_OR:
        return dt == TFL_DTYPE_BOOL ? bin<uint8_t, uint8_t>(it, OrF(), s) : -1;
    case TFL_OP_LOGICAL_NOT:
        return dt == TFL_DTYPE_BOOL ? un<uint8_t, uint8_t>(it, NotF{alpha}, s) : -1;
    case TFL_OP_CONJ:
        if (dt == TFL_DTYPE_COMPLEX64) return un<float2, float2>(it, ConjF{alpha}, s);
        if (dt == TFL_DTYPE_COMPLEX128) return un<double2, double2>(it, ConjF{alpha}, s);
        return -1;
    case TFL_OP_NEG:
        return un_real(dt, it, NegF{alpha}, s);
    case TFL_OP_ABS:
        return un_real(dt, it, AbsF{alpha}, s);
    case TFL_OP_SIGN:
        return un_real(dt, it, SignF{alpha}, s);
    case TFL_OP_EXP:
        return un_float(dt, it, ExpF{alpha}, s);
    case TFL_OP_LOG:
        return un_float(dt, it, LogF{alpha}, s);
    case TFL_OP_SQRT:
        return un_float(dt, it, SqrtF{alpha}, s);
    case TFL_OP_ERF:
        return un_float(dt, it, ErfF{alpha}, s);
    case TFL_OP_RELU:
        return un_float(dt, it, ReluF{alpha}, s);
    case TFL_OP_LEAKY_RELU:
        return un_float(dt, it, LeakyF{alpha}, s);
    case TFL_OP_SIGMOID:
        return un_float(dt, it, SigmoidF{alpha}, s);
    case TFL_OP_TANH:
        return un_float(dt, it, TanhF{alpha}, s);
    case TFL_OP_GELU:
        return un_float(dt, it, GeluF{alpha}, s);
    default:
        return -1;
    }
}

/* ---- Cast: through double like the CPU (saturating float -> int, NaN -> 0) ---------------- */
namespace
{

__device__ double load_d(const char *p, int dt)
{
    switch (dt) {
    case TFL_DTYPE_BOOL:
        return *(const uint8_t *)p != 0;
    case TFL_DTYPE_INT32:
        return *(const int32_t *)p;
    case TFL_DTYPE_INT64:
        return (double)*(const int64_t *)p;
    case TFL_DTYPE_FLOAT16:
        return __half2float(*(const __half *)p);
    case TFL_DTYPE_BFLOAT16:
        return __bfloat162float(*(const __nv_bfloat16 *)p);
    case TFL_DTYPE_FLOAT32:
        return *(const float *)p;
    default:
        return *(const double *)p;
    }
}

__device__ int64_t sat(double v, int64_t lo, int64_t hi)
{
    if (v != v) return 0;
    if (v <= (double)lo) return lo;
    if (v >= (double)hi) return hi;
    return (int64_t)v;
}

__device__ void store_d(char *p, int dt, double v)
{
    switch (dt) {
    case TFL_DTYPE_BOOL:
        *(uint8_t *)p = v != 0.0;
        break;
    case TFL_DTYPE_INT32:
        *(int32_t *)p = (int32_t)sat(v, INT32_MIN, INT32_MAX);
        break;
    case TFL_DTYPE_INT64:
        *(int64_t *)p = sat(v, INT64_MIN, INT64_MAX);
        break;
    case TFL_DTYPE_FLOAT16:
        *(__half *)p = __float2half_rn((float)v);
        break;
    case TFL_DTYPE_BFLOAT16:
        *(__nv_bfloat16 *)p = __float2bfloat16_rn((float)v);
        break;
    case TFL_DTYPE_FLOAT32:
        *(float *)p = (float)v;
        break;
    default:
        *(double *)p = v;
        break;
    }
}

__device__ void store_i(char *p, int dt, int64_t v)
{
    switch (dt) {
    case TFL_DTYPE_BOOL:
        *(uint8_t *)p = v != 0;
        break;
    case TFL_DTYPE_INT32:
        *(int32_t *)p = (int32_t)(uint32_t)(uint64_t)v;
        break;
    case TFL_DTYPE_INT64:
        *(int64_t *)p = v;
        break;
    default:
        store_d(p, dt, (double)v);
        break;
    }
}

__device__ __forceinline__ int dsize(int dt)
{
    return dt == TFL_DTYPE_BOOL                                  ? 1
           : dt == TFL_DTYPE_INT32 || dt == TFL_DTYPE_FLOAT32    ? 4
           : dt == TFL_DTYPE_FLOAT16 || dt == TFL_DTYPE_BFLOAT16 ? 2
                                                                 : 8;
}

__global__ void cast_kernel(tflcu_iter it, int src, int dst)
{
    const int ss = dsize(src), ds = dsize(dst);
    TFLCU_LOOP(i, it.numel)
    {
        const char *x = (const char *)it.ptr[1] + tflcu_offset(it, 1, i) * ss;
        char *y = (char *)it.ptr[0] + tflcu_offset(it, 0, i) * ds;
        switch (src) {
        case TFL_DTYPE_BOOL:
            store_i(y, dst, *(const uint8_t *)x != 0);
            break;
        case TFL_DTYPE_INT32:
            store_i(y, dst, *(const int32_t *)x);
            break;
        case TFL_DTYPE_INT64:
            store_i(y, dst, *(const int64_t *)x);
            break;
        default:
            store_d(y, dst, load_d(x, src));
            break;
        }
    }
}

/* the casts half precision runs through (TFL_OPF_HALF_VIA_F32) get a direct kernel */
struct H2F {
    __device__ float operator()(__half x) const { return __half2float(x); }
};
struct F2H {
    __device__ __half operator()(float x) const { return __float2half_rn(x); }
};
struct B2F {
    __device__ float operator()(__nv_bfloat16 x) const { return __bfloat162float(x); }
};
struct F2B {
    __device__ __nv_bfloat16 operator()(float x) const { return __float2bfloat16_rn(x); }
};

template <typename T> struct Same {
    __device__ T operator()(T x) const { return x; }
};
struct Bytes16 {
    double a, b;
};

template <typename T> __global__ void select_kernel(tflcu_iter it)
{
    TFLCU_LOOP(i, it.numel)
    {
        const uint8_t c = ((const uint8_t *)it.ptr[1])[tflcu_offset(it, 1, i)];
        ((T *)it.ptr[0])[tflcu_offset(it, 0, i)] =
            c ? ((const T *)it.ptr[2])[tflcu_offset(it, 2, i)]
              : ((const T *)it.ptr[3])[tflcu_offset(it, 3, i)];
    }
}

template <typename T> __global__ void fill_kernel(T *dst, int64_t n, T v)
{
    TFLCU_LOOP(i, n) dst[i] = v;
}

} // namespace

extern "C" int tflcu_cast(int src, int dst, const tflcu_iter *it, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (it->numel == 0) return 0;
    if (src >= TFL_DTYPE_COMPLEX64 || dst >= TFL_DTYPE_COMPLEX64) return -1;
    if (src == TFL_DTYPE_FLOAT16 && dst == TFL_DTYPE_FLOAT32)
        return un<__half, float>(it, H2F(), s);
    if (src == TFL_DTYPE_FLOAT32 && dst == TFL_DTYPE_FLOAT16)
        return un<float, __half>(it, F2H(), s);
    if (src == TFL_DTYPE_BFLOAT16 && dst == TFL_DTYPE_FLOAT32)
        return un<__nv_bfloat16, float>(it, B2F(), s);
    if (src == TFL_DTYPE_FLOAT32 && dst == TFL_DTYPE_BFLOAT16)
        return un<float, __nv_bfloat16>(it, F2B(), s);
    cast_kernel<<<tflcu_blocks(it->numel), TFLCU_THREADS, 0, s>>>(*it, src, dst);
    return tflcu_status();
}

extern "C" int tflcu_copy(int esize, const tflcu_iter *it, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (it->numel == 0) return 0;
    switch (esize) {
    case 1:
        return un<uint8_t, uint8_t>(it, Same<uint8_t>(), s);
    case 2:
        return un<uint16_t, uint16_t>(it, Same<uint16_t>(), s);
    case 4:
        return un<uint32_t, uint32_t>(it, Same<uint32_t>(), s);
    case 8:
        return un<uint64_t, uint64_t>(it, Same<uint64_t>(), s);
    case 16:
        return un<Bytes16, Bytes16>(it, Same<Bytes16>(), s);
    default:
        return -1;
    }
}

extern "C" int tflcu_select(int esize, const tflcu_iter *it, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (it->numel == 0) return 0;
    unsigned b = tflcu_blocks(it->numel);
    switch (esize) {
    case 1:
        select_kernel<uint8_t><<<b, TFLCU_THREADS, 0, s>>>(*it);
        break;
    case 2:
        select_kernel<uint16_t><<<b, TFLCU_THREADS, 0, s>>>(*it);
        break;
    case 4:
        select_kernel<uint32_t><<<b, TFLCU_THREADS, 0, s>>>(*it);
        break;
    case 8:
        select_kernel<uint64_t><<<b, TFLCU_THREADS, 0, s>>>(*it);
        break;
    case 16:
        select_kernel<Bytes16><<<b, TFLCU_THREADS, 0, s>>>(*it);
        break;
    default:
        return -1;
    }
    return tflcu_status();
}

extern "C" int tflcu_fill(int esize, void *dst, int64_t n, const void *value, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0) return 0;
    unsigned b = tflcu_blocks(n);
    switch (esize) {
    case 1:
        fill_kernel<<<b, TFLCU_THREADS, 0, s>>>((uint8_t *)dst, n, *(const uint8_t *)value);
        break;
    case 2:
        fill_kernel<<<b, TFLCU_THREADS, 0, s>>>((uint16_t *)dst, n, *(const uint16_t *)value);
        break;
    case 4:
        fill_kernel<<<b, TFLCU_THREADS, 0, s>>>((uint32_t *)dst, n, *(const uint32_t *)value);
        break;
    case 8:
        fill_kernel<<<b, TFLCU_THREADS, 0, s>>>((uint64_t *)dst, n, *(const uint64_t *)value);
        break;
    case 16: {
        Bytes16 v;
        memcpy(&v, value, 16);
        fill_kernel<<<b, TFLCU_THREADS, 0, s>>>((Bytes16 *)dst, n, v);
        break;
    }
    default:
        return -1;
    }
    return tflcu_status();
}
