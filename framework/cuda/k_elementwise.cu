/*
 * framework/cuda/k_elementwise.cu: elementwise kernels (unary, binary, comparisons, logical),
 * Cast, strided copies, select (SelectV2) and fills. One grid-stride kernel template per
 * arity; each op of framework/ops/op_list.h's TFL_EW_LIST is a functor generated from the
 * list around the scalar functions of framework/ops/ew_math.h, the very code the CPU's loops
 * call (framework/cpu/k_elementwise.c). Broadcasting and views come in the strides.
 */
#include "cu_common.cuh"
#include "ew_functors.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

using namespace tflcu_ew;

namespace
{

/* ---- one grid-stride kernel per arity; the output type is the functor's ---- */

template <typename TI, typename F> __global__ void un_kernel(tflcu_iter it, bool contig, F f)
{
    typedef decltype(f(TI())) TO;
    TO *o = (TO *)it.ptr[0];
    const TI *a = (const TI *)it.ptr[1];
    if (contig) {
        TFLCU_LOOP(i, it.numel) o[i] = f(a[i]);
    } else {
        TFLCU_LOOP(i, it.numel) o[tflcu_offset(it, 0, i)] = f(a[tflcu_offset(it, 1, i)]);
    }
}

template <typename TI, typename F> __global__ void bin_kernel(tflcu_iter it, bool contig, F f)
{
    typedef decltype(f(TI(), TI())) TO;
    TO *o = (TO *)it.ptr[0];
    const TI *a = (const TI *)it.ptr[1], *b = (const TI *)it.ptr[2];
    if (contig) {
        TFLCU_LOOP(i, it.numel) o[i] = f(a[i], b[i]);
    } else {
        TFLCU_LOOP(i, it.numel)
        o[tflcu_offset(it, 0, i)] = f(a[tflcu_offset(it, 1, i)], b[tflcu_offset(it, 2, i)]);
    }
}

template <typename TI, typename F> int un(const tflcu_iter *it, F f, cudaStream_t s)
{
    un_kernel<TI, F>
        <<<tflcu_blocks(it->numel), TFLCU_THREADS, 0, s>>>(*it, tflcu_contiguous(it), f);
    return tflcu_status();
}

template <typename TI, typename F> int bin(const tflcu_iter *it, F f, cudaStream_t s)
{
    bin_kernel<TI, F>
        <<<tflcu_blocks(it->numel), TFLCU_THREADS, 0, s>>>(*it, tflcu_contiguous(it), f);
    return tflcu_status();
}

/* the dtype switch of each `gpu` set and arity: un_R(dt, it, f, s), bin_F(...) ... */
#define CASE_UN_(p, q, DT, T, S)                                                                   \
    case TFL_DTYPE_##DT:                                                                           \
        return un<T>(it, f, s);
#define CASE_BIN_(p, q, DT, T, S)                                                                  \
    case TFL_DTYPE_##DT:                                                                           \
        return bin<T>(it, f, s);
/* float16 and bfloat16 through the float32 overload (Half), for the sets that have float32 */
#define HALF_UN_R                                                                                  \
    case TFL_DTYPE_FLOAT16:                                                                        \
        return un<__half>(it, Half<__half, F>{f}, s);                                              \
    case TFL_DTYPE_BFLOAT16:                                                                       \
        return un<__nv_bfloat16>(it, Half<__nv_bfloat16, F>{f}, s);
#define HALF_BIN_R                                                                                 \
    case TFL_DTYPE_FLOAT16:                                                                        \
        return bin<__half>(it, Half<__half, F>{f}, s);                                             \
    case TFL_DTYPE_BFLOAT16:                                                                       \
        return bin<__nv_bfloat16>(it, Half<__nv_bfloat16, F>{f}, s);
#define HALF_UN_F HALF_UN_R
#define HALF_BIN_F HALF_BIN_R
#define HALF_UN_RB HALF_UN_R
#define HALF_BIN_RB HALF_BIN_R
#define HALF_UN_B
#define HALF_BIN_B
#define HALF_UN_C
#define HALF_BIN_C
#define DISPATCH_(gpu)                                                                             \
    template <typename F> int un_##gpu(int dt, const tflcu_iter *it, F f, cudaStream_t s)          \
    {                                                                                              \
        switch (dt) {                                                                              \
            GSET_##gpu(CASE_UN_, ~, ~) HALF_UN_##gpu default : return -1;                          \
        }                                                                                          \
    }                                                                                              \
    template <typename F> int bin_##gpu(int dt, const tflcu_iter *it, F f, cudaStream_t s)         \
    {                                                                                              \
        switch (dt) {                                                                              \
            GSET_##gpu(CASE_BIN_, ~, ~) HALF_BIN_##gpu default : return -1;                        \
        }                                                                                          \
    }
DISPATCH_(R)
DISPATCH_(F)
DISPATCH_(RB)
DISPATCH_(B)
DISPATCH_(C)

/* the same-type functor of Identity/BroadcastTo copies and the half-precision casts */
template <typename T> struct Same {
    __host__ __device__ T operator()(T x) const { return x; }
};

} // namespace

/* the op switch: a case per line of TFL_EW_LIST with GPU dtypes (two for D, DA) */
#define CASE_(id, arity, functor, gpu)                                                             \
    case TFL_OP_##id:                                                                              \
        return arity##_##gpu(dt, it, functor{alpha}, s);
#define CASES_U(id, fn, gpu) CASE_(id, un, F_##fn, gpu)
#define CASES_UA CASES_U
#define CASES_B(id, fn, gpu) CASE_(id, bin, F_##fn, gpu)
#define CASES_D(id, fn, gpu) CASE_(id, un, F_##fn, gpu) CASE_(id##_GRAD, bin, F_##fn##_grad, gpu)
#define CASES_DA CASES_D
#define ON_GPU_R TFL_EW_KEEP
#define ON_GPU_F TFL_EW_KEEP
#define ON_GPU_RB TFL_EW_KEEP
#define ON_GPU_B TFL_EW_KEEP
#define ON_GPU_C TFL_EW_KEEP
#define ON_GPU_NONE TFL_EW_DROP
#define CASES_(ctx, id, nm, fn, kind, out, cpu, gpu, api, saves)                                   \
    ON_GPU_##gpu(CASES_##kind(id, fn, gpu))

extern "C" int tflcu_elementwise(int op, int dt, const tflcu_iter *it, double alpha, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (it->numel == 0) return 0;
    switch (op) {
        TFL_EW_LIST(CASES_, ~)
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
    if (src == TFL_DTYPE_FLOAT16 && dst == TFL_DTYPE_FLOAT32) return un<__half>(it, H2F(), s);
    if (src == TFL_DTYPE_FLOAT32 && dst == TFL_DTYPE_FLOAT16) return un<float>(it, F2H(), s);
    if (src == TFL_DTYPE_BFLOAT16 && dst == TFL_DTYPE_FLOAT32)
        return un<__nv_bfloat16>(it, B2F(), s);
    if (src == TFL_DTYPE_FLOAT32 && dst == TFL_DTYPE_BFLOAT16) return un<float>(it, F2B(), s);
    cast_kernel<<<tflcu_blocks(it->numel), TFLCU_THREADS, 0, s>>>(*it, src, dst);
    return tflcu_status();
}

extern "C" int tflcu_copy(int esize, const tflcu_iter *it, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (it->numel == 0) return 0;
    switch (esize) {
    case 1:
        return un<uint8_t>(it, Same<uint8_t>(), s);
    case 2:
        return un<uint16_t>(it, Same<uint16_t>(), s);
    case 4:
        return un<uint32_t>(it, Same<uint32_t>(), s);
    case 8:
        return un<uint64_t>(it, Same<uint64_t>(), s);
    case 16:
        return un<Bytes16>(it, Same<Bytes16>(), s);
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
