/*
 * framework/cuda/k_shape.cu: GatherV2, OneHot, UnsortedSegmentSum (atomic adds, or in
 * deterministic mode a gather over the segments' sorted index lists) and Dropout
 * (Philox4x32-10 on the CPU's counters, framework/cpu/k_norm.c, so one key drops the same
 * elements on both devices). Index checks report the first bad position through a device
 * word the host reads back.
 */
#include "cu_common.cuh"

#include "core_api/philox.h"

namespace
{

__device__ __forceinline__ int64_t load_index(const void *p, int64_t i, int dt)
{
    return dt == TFL_DTYPE_INT32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

__global__ void check_kernel(const void *idx, int dt, int64_t n, int64_t dim,
                             unsigned long long *bad)
{
    TFLCU_LOOP(i, n)
    {
        int64_t v = load_index(idx, i, dt);
        if (v < 0 || v >= dim) atomicMin(bad, (unsigned long long)i);
    }
}

/* one element of `inner_bytes / w` words of w bytes per thread */
template <typename W>
__global__ void gather_kernel(const W *params, const void *idx, int dt, W *out, int64_t outer,
                              int64_t dim, int64_t nidx, int64_t inner)
{
    TFLCU_LOOP(e, outer * nidx * inner)
    {
        int64_t j = e % inner, r = e / inner, i = r % nidx, o = r / nidx;
        int64_t v = load_index(idx, i, dt);
        if (v < 0 || v >= dim) continue; /* reported by check_kernel */
        out[e] = params[(o * dim + v) * inner + j];
    }
}

template <typename W>
int gather(const void *params, const void *idx, int dt, void *out, int64_t outer, int64_t dim,
           int64_t nidx, int64_t inner, cudaStream_t s)
{
    int64_t n = outer * nidx * inner;
    gather_kernel<W><<<tflcu_blocks(n), TFLCU_THREADS, 0, s>>>((const W *)params, idx, dt, (W *)out,
                                                               outer, dim, nidx, inner);
    return tflcu_status();
}

struct Bytes16 {
    double a, b;
};

template <typename T>
__global__ void one_hot_kernel(const void *idx, int dt, T *out, int64_t n, int64_t depth, T on,
                               T off)
{
    TFLCU_LOOP(e, n * depth) out[e] = load_index(idx, e / depth, dt) == e % depth ? on : off;
}

template <typename T>
int one_hot(const void *idx, int dt, void *out, int64_t n, int64_t depth, const void *on,
            const void *off, cudaStream_t s)
{
    T von, voff;
    memcpy(&von, on, sizeof(T));
    memcpy(&voff, off, sizeof(T));
    one_hot_kernel<T>
        <<<tflcu_blocks(n * depth), TFLCU_THREADS, 0, s>>>(idx, dt, (T *)out, n, depth, von, voff);
    return tflcu_status();
}

__device__ __forceinline__ void atomic_add(float *p, float v)
{
    atomicAdd(p, v);
}
__device__ __forceinline__ void atomic_add(double *p, double v)
{
    atomicAdd(p, v);
}
__device__ __forceinline__ void atomic_add(int32_t *p, int32_t v)
{
    atomicAdd((unsigned *)p, (unsigned)v);
}
__device__ __forceinline__ void atomic_add(int64_t *p, int64_t v)
{
    atomicAdd((unsigned long long *)p, (unsigned long long)v);
}

template <typename T>
__global__ void segment_kernel(const T *data, const void *ids, int dt, T *out, int64_t outer,
                               int64_t nidx, int64_t nseg, int64_t inner)
{
    TFLCU_LOOP(e, outer * nidx * inner)
    {
        int64_t j = e % inner, r = e / inner, i = r % nidx, o = r / nidx;
        int64_t v = load_index(ids, i, dt);
        if (v < 0 || v >= nseg) continue;
        atomic_add(&out[(o * nseg + v) * inner + j], data[e]);
    }
}

template <typename T>
int segment(const void *data, const void *ids, int dt, void *out, int64_t outer, int64_t nidx,
            int64_t nseg, int64_t inner, cudaStream_t s)
{
    int64_t n = outer * nidx * inner;
    if (n == 0) return 0;
    segment_kernel<T><<<tflcu_blocks(n), TFLCU_THREADS, 0, s>>>((const T *)data, ids, dt, (T *)out,
                                                                outer, nidx, nseg, inner);
    return tflcu_status();
}

/* deterministic UnsortedSegmentSum: out element (o, s, j) = the sum of data (o, perm[q], j) for
 * q in [offs[s], offs[s + 1]) (the rows of segment s, ascending: the CPU's order), from 0 */
template <typename T>
__global__ void segment_sorted_kernel(const T *data, const int64_t *perm, const int64_t *offs,
                                      T *out, int64_t outer, int64_t nidx, int64_t nseg,
                                      int64_t inner)
{
    TFLCU_LOOP(e, outer * nseg * inner)
    {
        int64_t j = e % inner, r = e / inner, sg = r % nseg, o = r / nseg;
        T acc = 0;
        for (int64_t q = offs[sg]; q < offs[sg + 1]; q++)
            acc = acc + data[(o * nidx + perm[q]) * inner + j];
        out[e] = acc;
    }
}

template <typename T>
__global__ void bn_kernel(const T *x, const T *m, const T *v, const T *o, const T *sc, T *y,
                          int64_t n, int64_t c, double eps)
{
    TFLCU_LOOP(i, n)
    {
        const int64_t j = i % c;
        const T a = (T)((double)sc[j] / sqrt((double)v[j] + eps));
        y[i] = (x[i] - m[j]) * a + o[j];
    }
}

#define DROP_WORD 0x44524F50u /* "DROP": ctr[3] of dropout's blocks, as on the CPU */

/* one Philox block (4 elements) per thread */
template <typename T>
__global__ void dropout_kernel(const T *x, T *y, int64_t n, uint32_t k0, uint32_t k1, uint32_t t,
                               double keep)
{
    TFLCU_LOOP(b, (n + 3) / 4)
    {
        const uint32_t ctr[4] = {(uint32_t)b, (uint32_t)((uint64_t)b >> 32), 0u, DROP_WORD};
        const uint32_t key[2] = {k0, k1};
        uint32_t w[4];
        tfl__philox4x32_10(ctr, key, w);
        for (int l = 0; l < 4; l++) {
            int64_t i = b * 4 + l;
            if (i >= n) break;
            const T q = (T)((double)x[i] / keep);
            y[i] = (w[l] >> 8) >= t ? q : (T)0;
        }
    }
}

} // namespace

extern "C" int tflcu_gather(const void *params, const void *idx, int dt, void *out, int64_t outer,
                            int64_t dim, int64_t nidx, int64_t inner_bytes, int64_t *bad,
                            void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (nidx == 0) return 0;
    check_kernel<<<tflcu_blocks(nidx), TFLCU_THREADS, 0, s>>>(idx, dt, nidx, dim,
                                                              (unsigned long long *)bad);
    if (outer == 0 || inner_bytes == 0) return tflcu_status();
    /* the widest word that divides the row and that both pointers are aligned to */
    const uint64_t al =
        (uint64_t)(uintptr_t)params | (uint64_t)(uintptr_t)out | (uint64_t)inner_bytes;
    if (inner_bytes % 16 == 0 && al % 8 == 0)
        return gather<Bytes16>(params, idx, dt, out, outer, dim, nidx, inner_bytes / 16, s);
    if (al % 8 == 0)
        return gather<uint64_t>(params, idx, dt, out, outer, dim, nidx, inner_bytes / 8, s);
    if (al % 4 == 0)
        return gather<uint32_t>(params, idx, dt, out, outer, dim, nidx, inner_bytes / 4, s);
    if (al % 2 == 0)
        return gather<uint16_t>(params, idx, dt, out, outer, dim, nidx, inner_bytes / 2, s);
    return gather<uint8_t>(params, idx, dt, out, outer, dim, nidx, inner_bytes, s);
}

extern "C" int tflcu_one_hot(const void *idx, int dt, void *out, int64_t n, int64_t depth,
                             int esize, const void *on, const void *off, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n * depth == 0) return 0;
    switch (esize) {
    case 1:
        return one_hot<uint8_t>(idx, dt, out, n, depth, on, off, s);
    case 2:
        return one_hot<uint16_t>(idx, dt, out, n, depth, on, off, s);
    case 4:
        return one_hot<uint32_t>(idx, dt, out, n, depth, on, off, s);
    case 8:
        return one_hot<uint64_t>(idx, dt, out, n, depth, on, off, s);
    case 16:
        return one_hot<Bytes16>(idx, dt, out, n, depth, on, off, s);
    default:
        return -1;
    }
}

extern "C" int tflcu_segment_sum(int dtype, const void *data, const void *ids, int ids_dtype,
                                 void *out, int64_t outer, int64_t nidx, int64_t nseg,
                                 int64_t inner, int64_t *bad, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (nidx == 0) return 0;
    check_kernel<<<tflcu_blocks(nidx), TFLCU_THREADS, 0, s>>>(ids, ids_dtype, nidx, nseg,
                                                              (unsigned long long *)bad);
    switch (dtype) {
    case TFL_DTYPE_INT32:
        return segment<int32_t>(data, ids, ids_dtype, out, outer, nidx, nseg, inner, s);
    case TFL_DTYPE_INT64:
        return segment<int64_t>(data, ids, ids_dtype, out, outer, nidx, nseg, inner, s);
    case TFL_DTYPE_FLOAT32:
        return segment<float>(data, ids, ids_dtype, out, outer, nidx, nseg, inner, s);
    case TFL_DTYPE_FLOAT64:
        return segment<double>(data, ids, ids_dtype, out, outer, nidx, nseg, inner, s);
    default:
        return -1;
    }
}

extern "C" int tflcu_segment_sum_sorted(int dtype, const void *data, const int64_t *perm,
                                        const int64_t *offs, void *out, int64_t outer, int64_t nidx,
                                        int64_t nseg, int64_t inner, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    int64_t n = outer * nseg * inner;
    if (n == 0) return 0;
    if (dtype == TFL_DTYPE_FLOAT32)
        segment_sorted_kernel<<<tflcu_blocks(n), TFLCU_THREADS, 0, s>>>(
            (const float *)data, perm, offs, (float *)out, outer, nidx, nseg, inner);
    else if (dtype == TFL_DTYPE_FLOAT64)
        segment_sorted_kernel<<<tflcu_blocks(n), TFLCU_THREADS, 0, s>>>(
            (const double *)data, perm, offs, (double *)out, outer, nidx, nseg, inner);
    else
        return -1;
    return tflcu_status();
}

extern "C" int tflcu_dropout(int dtype, const void *x, void *y, int64_t n, uint32_t key0,
                             uint32_t key1, uint32_t threshold, double keep, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0) return 0;
    unsigned b = tflcu_blocks((n + 3) / 4);
    if (dtype == TFL_DTYPE_FLOAT32)
        dropout_kernel<<<b, TFLCU_THREADS, 0, s>>>((const float *)x, (float *)y, n, key0, key1,
                                                   threshold, keep);
    else if (dtype == TFL_DTYPE_FLOAT64)
        dropout_kernel<<<b, TFLCU_THREADS, 0, s>>>((const double *)x, (double *)y, n, key0, key1,
                                                   threshold, keep);
    else
        return -1;
    return tflcu_status();
}

extern "C" int tflcu_batch_norm(int dtype, const void *x, const void *mean, const void *var,
                                const void *offset, const void *scale, void *y, int64_t n,
                                int64_t c, double eps, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0 || c == 0) return 0;
    unsigned b = tflcu_blocks(n);
    if (dtype == TFL_DTYPE_FLOAT32)
        bn_kernel<<<b, TFLCU_THREADS, 0, s>>>((const float *)x, (const float *)mean,
                                              (const float *)var, (const float *)offset,
                                              (const float *)scale, (float *)y, n, c, eps);
    else if (dtype == TFL_DTYPE_FLOAT64)
        bn_kernel<<<b, TFLCU_THREADS, 0, s>>>((const double *)x, (const double *)mean,
                                              (const double *)var, (const double *)offset,
                                              (const double *)scale, (double *)y, n, c, eps);
    else
        return -1;
    return tflcu_status();
}
