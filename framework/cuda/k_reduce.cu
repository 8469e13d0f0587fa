/*
 * framework/cuda/k_reduce.cu: Sum/Mean/Max/Min over any axes (one block per output element,
 * threads striding over the reduced elements, then a shared-memory tree), ArgMax/ArgMin,
 * Softmax/LogSoftmax and the two softmax cross-entropies (one thread per row), LayerNorm and
 * LayerNormGrad (one warp per row), BatchMoments and BatchNormTrainingGrad (blocks of rows by
 * blocks of channels, per-block sums in double merged in a fixed order; the arithmetic is
 * bn_train_elems.cuh's, tested on the host). Accumulators follow the CPU
 * (framework/cpu/k_reduce.c, k_loss.c): float32 sums in double, integer sums wrap, Max/Min
 * propagate NaN, ArgMax/ArgMin take the first extreme.
 */
#include "bn_train_elems.cuh"
#include "cu_common.cuh"

#include <float.h>

namespace
{

template <typename T> struct Acc {
    typedef T type;
};
template <> struct Acc<float> {
    typedef double type;
};
template <> struct Acc<int32_t> {
    typedef uint32_t type;
};
template <> struct Acc<int64_t> {
    typedef uint64_t type;
};

template <typename A> __device__ __forceinline__ A combine(int op, A a, A b)
{
    if (op == TFL_OP_MAX) return (b > a || b != b) ? b : a;
    if (op == TFL_OP_MIN) return (b < a || b != b) ? b : a;
    return a + b;
}

template <typename T> __device__ __forceinline__ T lowest();
template <> __device__ __forceinline__ float lowest<float>()
{
    return -INFINITY;
}
template <> __device__ __forceinline__ double lowest<double>()
{
    return -INFINITY;
}
template <> __device__ __forceinline__ int32_t lowest<int32_t>()
{
    return INT32_MIN;
}
template <> __device__ __forceinline__ int64_t lowest<int64_t>()
{
    return INT64_MIN;
}
template <typename T> __device__ __forceinline__ T highest();
template <> __device__ __forceinline__ float highest<float>()
{
    return INFINITY;
}
template <> __device__ __forceinline__ double highest<double>()
{
    return INFINITY;
}
template <> __device__ __forceinline__ int32_t highest<int32_t>()
{
    return INT32_MAX;
}
template <> __device__ __forceinline__ int64_t highest<int64_t>()
{
    return INT64_MAX;
}

/* A: the accumulator, Acc<T> for sums (wrapping unsigned for integers, double for float32),
 * T itself for Max/Min (a signed compare) */
template <typename T, typename A>
__global__ void reduce_kernel(tflcu_reduce r, int op, const T *x, T *out)
{
    __shared__ A part[TFLCU_THREADS];
    const A init = op == TFL_OP_MAX ? (A)lowest<T>() : op == TFL_OP_MIN ? (A)highest<T>() : (A)0;
    for (int64_t o = blockIdx.x; o < r.n_out; o += gridDim.x) {
        int64_t base = 0, rest = o;
        for (int d = r.nk - 1; d >= 0; d--) {
            int64_t q = rest / r.kshape[d];
            base += (rest - q * r.kshape[d]) * r.kstride[d];
            rest = q;
        }
        A acc = init;
        for (int64_t j = threadIdx.x; j < r.count; j += blockDim.x) {
            int64_t off = base, rj = j;
            for (int d = r.nr - 1; d >= 0; d--) {
                int64_t q = rj / r.rshape[d];
                off += (rj - q * r.rshape[d]) * r.rstride[d];
                rj = q;
            }
            acc = combine<A>(op, acc, (A)x[off]);
        }
        part[threadIdx.x] = acc;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w /= 2) {
            if ((int)threadIdx.x < w)
                part[threadIdx.x] = combine<A>(op, part[threadIdx.x], part[threadIdx.x + w]);
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            A v = part[0];
            if (op == TFL_OP_MEAN) {
                if (sizeof(T) < sizeof(A) || (T)0.5 != (T)0) /* floats */
                    out[o] = (T)((double)v / (double)r.count);
                else
                    out[o] = r.count ? (T)((int64_t)(T)v / r.count) : (T)0;
            } else {
                out[o] = (T)v;
            }
        }
        __syncthreads();
    }
}

template <typename T>
int reduce(const tflcu_reduce *r, int op, const void *x, void *out, cudaStream_t s)
{
    unsigned blocks = (unsigned)(r->n_out < 65535 ? r->n_out : 65535);
    if (op == TFL_OP_MAX || op == TFL_OP_MIN)
        reduce_kernel<T, T><<<blocks, TFLCU_THREADS, 0, s>>>(*r, op, (const T *)x, (T *)out);
    else
        reduce_kernel<T, typename Acc<T>::type>
            <<<blocks, TFLCU_THREADS, 0, s>>>(*r, op, (const T *)x, (T *)out);
    return tflcu_status();
}

template <typename T>
__global__ void arg_kernel(const T *x, int64_t *out, int64_t outer, int64_t n, int64_t inner,
                           bool mx)
{
    TFLCU_LOOP(r, outer * inner)
    {
        const T *row = x + (r / inner) * n * inner + r % inner;
        T best = row[0];
        int64_t at = 0;
        for (int64_t i = 1; i < n; i++) {
            T v = row[i * inner];
            if (mx ? v > best : v < best) {
                best = v;
                at = i;
            }
        }
        out[r] = at;
    }
}

template <typename T>
__global__ void softmax_kernel(const T *x, T *y, int64_t outer, int64_t n, int64_t inner,
                               bool log_out)
{
    TFLCU_LOOP(r, outer * inner)
    {
        const int64_t off = (r / inner) * n * inner + r % inner;
        const T *xr = x + off;
        T *yr = y + off;
        T m = xr[0];
        for (int64_t i = 1; i < n; i++)
            m = xr[i * inner] > m ? xr[i * inner] : m;
        double sum = 0;
        if (log_out) {
            for (int64_t i = 0; i < n; i++)
                sum += exp(xr[i * inner] - m);
            T lse = (T)log(sum);
            for (int64_t i = 0; i < n; i++)
                yr[i * inner] = xr[i * inner] - m - lse;
        } else {
            for (int64_t i = 0; i < n; i++) {
                T e = exp(xr[i * inner] - m);
                yr[i * inner] = e;
                sum += e;
            }
            T inv = (T)(1.0 / sum);
            for (int64_t i = 0; i < n; i++)
                yr[i * inner] *= inv;
        }
    }
}

/* v summed over the warp's 32 lanes in a fixed order (a tree down to lane 0), then given to
 * every lane: the same value in all lanes, the same on every run */
__device__ __forceinline__ double warp_sum(double v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    return __shfl_sync(0xffffffffu, v, 0);
}

/* a row's mean and rstd = 1 / sqrt(variance + eps) in double, summed by the warp's lanes (every
 * lane calls it, and every lane gets them) */
template <typename T>
__device__ __forceinline__ void warp_row_stats(const T *x, int64_t n, int lane, double eps,
                                               double *mean, double *rstd)
{
    double s = 0, q = 0;
    for (int64_t j = lane; j < n; j += 32)
        s += (double)x[j];
    const double m = warp_sum(s) / (double)n;
    for (int64_t j = lane; j < n; j += 32) {
        const double d = (double)x[j] - m;
        q += d * d;
    }
    *mean = m;
    *rstd = 1.0 / sqrt(warp_sum(q) / (double)n + eps);
}

/* LayerNorm (grad false: a x, b gamma, c beta) or LayerNormGrad (a dy, b x, c gamma), rows of
 * n; every lane of a warp takes the same rows, so the shuffles see the whole warp */
template <typename T>
__global__ void layer_norm_kernel(bool grad, const T *a, const T *b, const T *c, T *out,
                                  int64_t rows, int64_t n, double eps)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < rows; r += warps) {
        const T *x = (grad ? b : a) + r * n;
        T *o = out + r * n;
        double m, rs;
        warp_row_stats(x, n, lane, eps, &m, &rs);
        const T mt = (T)m, rt = (T)rs;
        if (!grad) {
            for (int64_t j = lane; j < n; j += 32)
                o[j] = (x[j] - mt) * rt * b[j] + c[j];
            continue;
        }
        const T *dy = a + r * n;
        double sg = 0, sgx = 0;
        for (int64_t j = lane; j < n; j += 32) {
            const double gj = (double)dy[j] * (double)c[j];
            sg += gj;
            sgx += gj * ((double)x[j] - m);
        }
        sg = warp_sum(sg);
        sgx = warp_sum(sgx);
        const T at = (T)(sg / (double)n), bt = (T)(sgx / (double)n * rs * rs * rs);
        for (int64_t j = lane; j < n; j += 32)
            o[j] = rt * (dy[j] * c[j] - at) - (x[j] - mt) * bt;
    }
}

/* LayerNormParamGrad, first pass: each row's mean and rstd (in double, as LayerNorm's) into
 * stats[2 r], stats[2 r + 1]; one warp per row */
template <typename T>
__global__ void ln_row_stats_kernel(const T *x, double *stats, int64_t rows, int64_t n, double eps)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < rows; r += warps) {
        double m, rs;
        warp_row_stats(x + r * n, n, lane, eps, &m, &rs);
        if (lane == 0) {
            stats[2 * r] = m;
            stats[2 * r + 1] = rs;
        }
    }
}

/* LayerNormParamGrad, second pass: per feature j, sum(dy xhat) into out[j] and sum(dy) into
 * out[n + j], over the rows in order (one thread per feature: no atomics, the same sums on
 * every run) */
template <typename T>
__global__ void ln_param_grad_kernel(const T *dy, const T *x, const double *stats, T *out,
                                     int64_t rows, int64_t n)
{
    TFLCU_LOOP(j, n)
    {
        double s0 = 0, s1 = 0;
        for (int64_t r = 0; r < rows; r++) {
            const double g = (double)dy[r * n + j];
            s0 += g * (((double)x[r * n + j] - stats[2 * r]) * stats[2 * r + 1]);
            s1 += g;
        }
        out[j] = (T)s0;
        out[n + j] = (T)s1;
    }
}

/* the largest of v over the warp's 32 lanes, in every lane (a max is exact in any order) */
template <typename T>
__device__ __forceinline__ T warp_max(T v)
{
    for (int o = 16; o > 0; o >>= 1) {
        const T w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w > v ? w : v;
    }
    return v;
}

/* AttentionSoftmax over contiguous scores (rows, n), row r the query r % q: softmax(scale x)
 * of the first `kept` entries (all, or those up to the query's own position when causal), 0
 * for the rest, one warp per row; the sum in double, as the CPU (framework/cpu/k_reduce.c) */
template <typename T>
__global__ void attention_softmax_kernel(const T *x, T *y, int64_t rows, int64_t q, int64_t n,
                                         bool causal, T scale)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < rows; r += warps) {
        const int64_t i = r % q, kept = causal && i + 1 < n ? i + 1 : n;
        const T *xr = x + r * n;
        T *yr = y + r * n;
        T m = xr[0] * scale;
        for (int64_t j = lane; j < kept; j += 32) {
            const T v = xr[j] * scale;
            m = v > m ? v : m;
        }
        m = warp_max(m);
        double s = 0;
        for (int64_t j = lane; j < kept; j += 32) {
            const T e = exp(xr[j] * scale - m);
            yr[j] = e;
            s += (double)e;
        }
        const T inv = (T)(1.0 / warp_sum(s));
        for (int64_t j = lane; j < n; j += 32)
            yr[j] = j < kept ? yr[j] * inv : (T)0;
    }
}

/* SoftmaxGrad along the middle axis of contiguous (outer, n, inner): dx = scale y (dy -
 * sum(dy y)), one warp per row, the sum in double */
template <typename T>
__global__ void softmax_grad_kernel(const T *y, const T *dy, T *dx, int64_t outer, int64_t n,
                                    int64_t inner, T scale)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5), rows = outer * inner;
    for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < rows; r += warps) {
        const int64_t off = (r / inner) * n * inner + r % inner;
        double s = 0;
        for (int64_t j = lane; j < n; j += 32)
            s += (double)y[off + j * inner] * (double)dy[off + j * inner];
        const T rt = (T)warp_sum(s);
        for (int64_t j = lane; j < n; j += 32) {
            const int64_t e = off + j * inner;
            dx[e] = scale * y[e] * (dy[e] - rt);
        }
    }
}

template <typename T>
__global__ void xent_kernel(const T *x, const T *z, T *out, int64_t outer, int64_t n, int64_t inner)
{
    TFLCU_LOOP(r, outer * inner)
    {
        if (n == 0) {
            out[r] = 0;
            continue;
        }
        const int64_t off = (r / inner) * n * inner + r % inner;
        const T *xr = x + off, *zr = z + off;
        T m = xr[0];
        for (int64_t i = 1; i < n; i++)
            m = xr[i * inner] > m ? xr[i * inner] : m;
        double s = 0, zd = 0, zsum = 0;
        for (int64_t i = 0; i < n; i++) {
            T d = m - xr[i * inner];
            s += exp(-d);
            zd += (double)zr[i * inner] * (double)d;
            zsum += (double)zr[i * inner];
        }
        out[r] = (T)(zd + zsum * log(s));
    }
}

__device__ __forceinline__ int64_t load_index(const void *p, int64_t i, int dt)
{
    return dt == TFL_DTYPE_INT32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

template <typename T>
__global__ void sparse_kernel(const T *x, const void *labels, int ldt, T *out, int64_t rows,
                              int64_t classes, unsigned long long *bad)
{
    TFLCU_LOOP(r, rows)
    {
        int64_t label = load_index(labels, r, ldt);
        if (label < 0 || label >= classes) {
            atomicMin(bad, (unsigned long long)r);
            continue;
        }
        const T *xr = x + r * classes;
        T m = xr[0];
        for (int64_t i = 1; i < classes; i++)
            m = xr[i] > m ? xr[i] : m;
        double s = 0;
        for (int64_t i = 0; i < classes; i++)
            s += exp(xr[i] - m);
        out[r] = (T)((double)(m - xr[label]) + log(s));
    }
}

/* SparseSoftmaxCrossEntropyWithLogitsGrad: dx = dy (softmax(x) - one_hot(label)) per row, one
 * warp per row (the max by a shuffle tree, the sum in double by warp_sum's fixed tree); a bad
 * label leaves its row unwritten and makes *bad the smallest such row */
template <typename T>
__global__ void sparse_grad_kernel(const T *x, const void *labels, int ldt, const T *dy, T *dx,
                                   int64_t rows, int64_t classes, unsigned long long *bad)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < rows; r += warps) {
        const int64_t label = load_index(labels, r, ldt);
        if (label < 0 || label >= classes) {
            if (lane == 0) atomicMin(bad, (unsigned long long)r);
            continue; /* the same for every lane of the warp */
        }
        const T *xr = x + r * classes;
        T *dr = dx + r * classes;
        T m = xr[0];
        for (int64_t i = lane; i < classes; i += 32)
            m = xr[i] > m ? xr[i] : m;
        m = warp_max(m);
        double s = 0;
        for (int64_t i = lane; i < classes; i += 32) {
            const T e = exp(xr[i] - m);
            dr[i] = e;
            s += (double)e;
        }
        const T f = (T)((double)dy[r] / warp_sum(s));
        for (int64_t i = lane; i < classes; i += 32)
            dr[i] = dr[i] * f - (i == label ? dy[r] : (T)0);
    }
}

/* ---- BatchMoments, BatchNormParamGrad and BatchNormTrainingGrad (bn_train_elems.cuh) ------ */

using tflcu_bn_train::geometry;

/* block (blockIdx.x, blockIdx.y)'s partials of x (rows, c): its mean and its sum of squared
 * deviations per channel into part[blockIdx.y][2][c] */
template <typename T>
__global__ void __launch_bounds__(TFLCU_BNT_THREADS)
    batch_moments_kernel(const T *x, double *part, int64_t rows, int64_t c, geometry g)
{
    using namespace tflcu_bn_train;
    __shared__ double sn[TFLCU_BNT_THREADS], sm[TFLCU_BNT_THREADS], sq[TFLCU_BNT_THREADS];
    const int t = threadIdx.x, tx = t % g.tx, lane = t / g.tx;
    const int64_t j = (int64_t)blockIdx.x * g.tx + tx, b = blockIdx.y;
    int64_t r0, r1;
    bnt_block_rows(g, rows, b, &r0, &r1);
    double n = 0, m = 0, q = 0;
    if (j < c) bnt_thread_moments(x, c, j, r0 + lane, r1, g.ty, &n, &m, &q);
    sn[t] = n;
    sm[t] = m;
    sq[t] = q;
    __syncthreads();
    for (int w = g.ty / 2; w > 0; w /= 2) {
        bnt_moments_tree_step(sn, sm, sq, t, g.tx, w);
        __syncthreads();
    }
    if (lane == 0 && j < c) {
        part[2 * c * b + j] = sm[tx];
        part[2 * c * b + c + j] = sq[tx];
    }
}

/* out (2, c): channel block blockIdx.x's partials merged (bnt_moments_fold, then the lanes'
 * tree); NaN without rows */
template <typename T>
__global__ void __launch_bounds__(TFLCU_BNT_MERGE_THREADS)
    batch_moments_merge_kernel(const double *part, T *out, int64_t rows, int64_t c, geometry g)
{
    using namespace tflcu_bn_train;
    __shared__ double sn[TFLCU_BNT_MERGE_THREADS], sm[TFLCU_BNT_MERGE_THREADS],
        sq[TFLCU_BNT_MERGE_THREADS];
    const int t = threadIdx.x, tx = t % g.tx, lane = t / g.tx;
    const int lanes = TFLCU_BNT_MERGE_THREADS / g.tx;
    const int64_t j = (int64_t)blockIdx.x * g.tx + tx;
    const bool on = j < c;
    double n = 0, m = 0, q = 0;
    if (on) bnt_moments_fold(part, g, rows, c, j, lane, lanes, &n, &m, &q);
    sn[t] = n;
    sm[t] = m;
    sq[t] = q;
    __syncthreads();
    for (int w = lanes / 2; w > 0; w /= 2) {
        bnt_moments_tree_step(sn, sm, sq, t, g.tx, w);
        __syncthreads();
    }
    if (lane == 0 && on) {
        out[j] = rows > 0 ? (T)sm[tx] : (T)NAN;
        out[c + j] = rows > 0 ? (T)(sq[tx] / (double)rows) : (T)NAN;
    }
}

/* block (blockIdx.x, blockIdx.y)'s sum(dy) and sum(dy (x - mean)) per channel into
 * part[blockIdx.y][2][c]; mo: the moments (2, c), row 0 the mean */
template <typename T>
__global__ void __launch_bounds__(TFLCU_BNT_THREADS)
    bn_grad_sums_kernel(const T *dy, const T *x, const T *mo, double *part, int64_t rows, int64_t c,
                        geometry g)
{
    using namespace tflcu_bn_train;
    __shared__ double s[2][TFLCU_BNT_THREADS];
    const int t = threadIdx.x, tx = t % g.tx, lane = t / g.tx;
    const int64_t j = (int64_t)blockIdx.x * g.tx + tx, b = blockIdx.y;
    const bool on = j < c;
    int64_t r0, r1;
    bnt_block_rows(g, rows, b, &r0, &r1);
    double sg = 0, sgx = 0;
    if (on) bnt_grad_sums(dy, x, mo[j], c, j, r0 + lane, r1, g.ty, &sg, &sgx);
    s[0][t] = sg;
    s[1][t] = sgx;
    __syncthreads();
    for (int w = g.ty / 2; w > 0; w /= 2) {
        bnt_tree_step(s[0], t, g.tx, w);
        bnt_tree_step(s[1], t, g.tx, w);
        __syncthreads();
    }
    if (lane == 0 && on) {
        part[2 * c * b + j] = s[0][tx];
        part[2 * c * b + c + j] = s[1][tx];
    }
}

/* out (2, c): BatchNormParamGrad's dgamma and dbeta per channel of block blockIdx.x from the
 * blocks' sums (bnt_grad_fold, then the lanes' tree) */
template <typename T>
__global__ void __launch_bounds__(TFLCU_BNT_MERGE_THREADS)
    bn_param_grad_merge_kernel(const double *part, const T *mo, T *out, int64_t c, double eps,
                               geometry g)
{
    using namespace tflcu_bn_train;
    __shared__ double s[2][TFLCU_BNT_MERGE_THREADS];
    const int t = threadIdx.x, tx = t % g.tx, lane = t / g.tx;
    const int lanes = TFLCU_BNT_MERGE_THREADS / g.tx;
    const int64_t j = (int64_t)blockIdx.x * g.tx + tx;
    const bool on = j < c;
    double sg = 0, sgx = 0;
    if (on) bnt_grad_fold(part, g, c, j, lane, lanes, &sg, &sgx);
    s[0][t] = sg;
    s[1][t] = sgx;
    __syncthreads();
    for (int w = lanes / 2; w > 0; w /= 2) {
        bnt_tree_step(s[0], t, g.tx, w);
        bnt_tree_step(s[1], t, g.tx, w);
        __syncthreads();
    }
    if (lane == 0 && on) bnt_param_grads(s[0][tx], s[1][tx], mo[c + j], eps, &out[j], &out[c + j]);
}

/* coef (3, c): a, b, d per channel from BatchNormParamGrad's sums (2, c) */
template <typename T>
__global__ void bn_grad_coefs_kernel(const T *sums, const T *mo, const T *gamma, T *coef,
                                     int64_t rows, int64_t c, double eps)
{
    TFLCU_LOOP(j, c)
    {
        tflcu_bn_train::bnt_grad_coefs(sums[j], sums[c + j], rows, mo[c + j], gamma[j], eps,
                                       &coef[j], &coef[c + j], &coef[2 * c + j]);
    }
}

/* dx over the partial-sum kernels' grid: each thread its channel's coefficients, then its rows
 * of the block */
template <typename T>
__global__ void __launch_bounds__(TFLCU_BNT_THREADS)
    bn_grad_apply_kernel(const T *dy, const T *x, const T *mo, const T *coef, T *dx, int64_t rows,
                         int64_t c, geometry g)
{
    const int t = threadIdx.x, tx = t % g.tx, lane = t / g.tx;
    const int64_t j = (int64_t)blockIdx.x * g.tx + tx;
    if (j >= c) return;
    int64_t r0, r1;
    tflcu_bn_train::bnt_block_rows(g, rows, blockIdx.y, &r0, &r1);
    const T m = mo[j], a = coef[j], b = coef[c + j], d = coef[2 * c + j];
    for (int64_t r = r0 + lane; r < r1; r += g.ty) {
        const int64_t i = r * c + j;
        dx[i] = tflcu_bn_train::bnt_grad_elem(dy[i], x[i], m, a, b, d);
    }
}

/* the grid of the partial-sum kernels (the merge kernels': its x), or false when the channel
 * blocks exceed its x limit */
static bool bnt_grid(const geometry &g, dim3 *grid)
{
    if (g.cb > 0x7fffffff || g.nb > 65535) return false;
    *grid = dim3((unsigned)g.cb, (unsigned)(g.nb > 0 ? g.nb : 1), 1);
    return true;
}

template <typename T>
int batch_moments(const T *x, T *out, double *part, int64_t rows, int64_t c, cudaStream_t s)
{
    const geometry g = tflcu_bn_train::bnt_geometry(rows, c);
    dim3 grid;
    if (!bnt_grid(g, &grid)) return (int)cudaErrorInvalidConfiguration;
    if (rows > 0) batch_moments_kernel<<<grid, TFLCU_BNT_THREADS, 0, s>>>(x, part, rows, c, g);
    batch_moments_merge_kernel<<<grid.x, TFLCU_BNT_MERGE_THREADS, 0, s>>>(part, out, rows, c, g);
    return tflcu_status();
}

template <typename T>
int bn_param_grad(const T *dy, const T *x, const T *mo, T *out, double *part, int64_t rows,
                  int64_t c, double eps, cudaStream_t s)
{
    const geometry g = tflcu_bn_train::bnt_geometry(rows, c);
    dim3 grid;
    if (!bnt_grid(g, &grid)) return (int)cudaErrorInvalidConfiguration;
    if (rows > 0)
        bn_grad_sums_kernel<<<grid, TFLCU_BNT_THREADS, 0, s>>>(dy, x, mo, part, rows, c, g);
    bn_param_grad_merge_kernel<<<grid.x, TFLCU_BNT_MERGE_THREADS, 0, s>>>(part, mo, out, c, eps, g);
    return tflcu_status();
}

template <typename T>
int bn_training_grad(const T *dy, const T *x, const T *mo, const T *gamma, const T *sums, T *dx,
                     T *coef, int64_t rows, int64_t c, double eps, cudaStream_t s)
{
    const geometry g = tflcu_bn_train::bnt_geometry(rows, c);
    dim3 grid;
    if (!bnt_grid(g, &grid)) return (int)cudaErrorInvalidConfiguration;
    bn_grad_coefs_kernel<<<tflcu_blocks(c), TFLCU_THREADS, 0, s>>>(sums, mo, gamma, coef, rows, c,
                                                                   eps);
    bn_grad_apply_kernel<<<grid, TFLCU_BNT_THREADS, 0, s>>>(dy, x, mo, coef, dx, rows, c, g);
    return tflcu_status();
}

} // namespace

extern "C" int tflcu_reduce_run(int op, int dt, const tflcu_reduce *r, const void *x, void *out,
                                void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (r->n_out == 0) return 0;
    switch (dt) {
    case TFL_DTYPE_INT32:
        return reduce<int32_t>(r, op, x, out, s);
    case TFL_DTYPE_INT64:
        return reduce<int64_t>(r, op, x, out, s);
    case TFL_DTYPE_FLOAT32:
        return reduce<float>(r, op, x, out, s);
    case TFL_DTYPE_FLOAT64:
        return reduce<double>(r, op, x, out, s);
    default:
        return -1;
    }
}

extern "C" int tflcu_arg(int op, int dt, const void *x, int64_t *out, int64_t outer, int64_t n,
                         int64_t inner, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    int64_t rows = outer * inner;
    if (rows == 0) return 0;
    bool mx = op == TFL_OP_ARGMAX;
    unsigned b = tflcu_blocks(rows);
    switch (dt) {
    case TFL_DTYPE_INT32:
        arg_kernel<<<b, TFLCU_THREADS, 0, s>>>((const int32_t *)x, out, outer, n, inner, mx);
        break;
    case TFL_DTYPE_INT64:
        arg_kernel<<<b, TFLCU_THREADS, 0, s>>>((const int64_t *)x, out, outer, n, inner, mx);
        break;
    case TFL_DTYPE_FLOAT32:
        arg_kernel<<<b, TFLCU_THREADS, 0, s>>>((const float *)x, out, outer, n, inner, mx);
        break;
    case TFL_DTYPE_FLOAT64:
        arg_kernel<<<b, TFLCU_THREADS, 0, s>>>((const double *)x, out, outer, n, inner, mx);
        break;
    default:
        return -1;
    }
    return tflcu_status();
}

extern "C" int tflcu_ln_param_grad(int dt, const void *dy, const void *x, void *out,
                                   double *stats, int64_t rows, int64_t n, double eps,
                                   void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0) return 0;
    const unsigned row_blocks = tflcu_blocks(rows > INT64_MAX / 64 ? (int64_t)65535 * TFLCU_THREADS
                                                                    : rows * 32);
    if (dt == TFL_DTYPE_FLOAT32) {
        if (rows > 0)
            ln_row_stats_kernel<<<row_blocks, TFLCU_THREADS, 0, s>>>((const float *)x, stats,
                                                                      rows, n, eps);
        ln_param_grad_kernel<<<tflcu_blocks(n), TFLCU_THREADS, 0, s>>>(
            (const float *)dy, (const float *)x, stats, (float *)out, rows, n);
    } else if (dt == TFL_DTYPE_FLOAT64) {
        if (rows > 0)
            ln_row_stats_kernel<<<row_blocks, TFLCU_THREADS, 0, s>>>((const double *)x, stats,
                                                                      rows, n, eps);
        ln_param_grad_kernel<<<tflcu_blocks(n), TFLCU_THREADS, 0, s>>>(
            (const double *)dy, (const double *)x, stats, (double *)out, rows, n);
    } else
        return -1;
    return tflcu_status();
}

extern "C" int tflcu_attention_softmax(int dt, const void *x, void *y, int64_t rows, int64_t q,
                                       int64_t n, int causal, double scale, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (rows == 0 || n == 0) return 0;
    const unsigned blocks =
        tflcu_blocks(rows > INT64_MAX / 64 ? (int64_t)65535 * TFLCU_THREADS : rows * 32);
    if (dt == TFL_DTYPE_FLOAT32)
        attention_softmax_kernel<<<blocks, TFLCU_THREADS, 0, s>>>(
            (const float *)x, (float *)y, rows, q, n, causal != 0, (float)scale);
    else if (dt == TFL_DTYPE_FLOAT64)
        attention_softmax_kernel<<<blocks, TFLCU_THREADS, 0, s>>>(
            (const double *)x, (double *)y, rows, q, n, causal != 0, scale);
    else
        return -1;
    return tflcu_status();
}

extern "C" int tflcu_softmax_grad(int dt, const void *y, const void *dy, void *dx, int64_t outer,
                                  int64_t n, int64_t inner, double scale, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    const int64_t rows = outer * inner;
    if (rows == 0 || n == 0) return 0;
    const unsigned blocks =
        tflcu_blocks(rows > INT64_MAX / 64 ? (int64_t)65535 * TFLCU_THREADS : rows * 32);
    if (dt == TFL_DTYPE_FLOAT32)
        softmax_grad_kernel<<<blocks, TFLCU_THREADS, 0, s>>>(
            (const float *)y, (const float *)dy, (float *)dx, outer, n, inner, (float)scale);
    else if (dt == TFL_DTYPE_FLOAT64)
        softmax_grad_kernel<<<blocks, TFLCU_THREADS, 0, s>>>(
            (const double *)y, (const double *)dy, (double *)dx, outer, n, inner, scale);
    else
        return -1;
    return tflcu_status();
}

extern "C" int tflcu_layer_norm(int dt, int grad, const void *a, const void *b, const void *c,
                                void *out, int64_t rows, int64_t n, double eps, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (rows == 0 || n == 0) return 0;
    const unsigned blocks =
        tflcu_blocks(rows > INT64_MAX / 64 ? (int64_t)65535 * TFLCU_THREADS : rows * 32);
    if (dt == TFL_DTYPE_FLOAT32)
        layer_norm_kernel<<<blocks, TFLCU_THREADS, 0, s>>>(grad != 0, (const float *)a,
                                                           (const float *)b, (const float *)c,
                                                           (float *)out, rows, n, eps);
    else if (dt == TFL_DTYPE_FLOAT64)
        layer_norm_kernel<<<blocks, TFLCU_THREADS, 0, s>>>(grad != 0, (const double *)a,
                                                           (const double *)b, (const double *)c,
                                                           (double *)out, rows, n, eps);
    else
        return -1;
    return tflcu_status();
}

extern "C" int tflcu_softmax(int dt, int log_out, const void *x, void *y, int64_t outer, int64_t n,
                             int64_t inner, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    int64_t rows = outer * inner;
    if (rows == 0 || n == 0) return 0;
    unsigned b = tflcu_blocks(rows);
    if (dt == TFL_DTYPE_FLOAT32)
        softmax_kernel<<<b, TFLCU_THREADS, 0, s>>>((const float *)x, (float *)y, outer, n, inner,
                                                   log_out != 0);
    else if (dt == TFL_DTYPE_FLOAT64)
        softmax_kernel<<<b, TFLCU_THREADS, 0, s>>>((const double *)x, (double *)y, outer, n, inner,
                                                   log_out != 0);
    else
        return -1;
    return tflcu_status();
}

extern "C" int tflcu_xent(int dt, const void *x, const void *z, void *out, int64_t outer, int64_t n,
                          int64_t inner, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    int64_t rows = outer * inner;
    if (rows == 0) return 0;
    unsigned b = tflcu_blocks(rows);
    if (dt == TFL_DTYPE_FLOAT32)
        xent_kernel<<<b, TFLCU_THREADS, 0, s>>>((const float *)x, (const float *)z, (float *)out,
                                                outer, n, inner);
    else if (dt == TFL_DTYPE_FLOAT64)
        xent_kernel<<<b, TFLCU_THREADS, 0, s>>>((const double *)x, (const double *)z, (double *)out,
                                                outer, n, inner);
    else
        return -1;
    return tflcu_status();
}

extern "C" int tflcu_sparse_xent(int dt, const void *x, const void *labels, int ldt, void *out,
                                 int64_t rows, int64_t classes, int64_t *bad, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (rows == 0) return 0;
    unsigned b = tflcu_blocks(rows);
    unsigned long long *ub = (unsigned long long *)bad;
    if (dt == TFL_DTYPE_FLOAT32)
        sparse_kernel<<<b, TFLCU_THREADS, 0, s>>>((const float *)x, labels, ldt, (float *)out, rows,
                                                  classes, ub);
    else if (dt == TFL_DTYPE_FLOAT64)
        sparse_kernel<<<b, TFLCU_THREADS, 0, s>>>((const double *)x, labels, ldt, (double *)out,
                                                  rows, classes, ub);
    else
        return -1;
    return tflcu_status();
}

extern "C" int tflcu_sparse_xent_grad(int dt, const void *x, const void *labels, int ldt,
                                      const void *dy, void *dx, int64_t rows, int64_t classes,
                                      int64_t *bad, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (rows == 0) return 0; /* no classes: every label is bad, as the kernel reports */
    const unsigned b =
        tflcu_blocks(rows > INT64_MAX / 64 ? (int64_t)65535 * TFLCU_THREADS : rows * 32);
    unsigned long long *ub = (unsigned long long *)bad;
    if (dt == TFL_DTYPE_FLOAT32)
        sparse_grad_kernel<<<b, TFLCU_THREADS, 0, s>>>((const float *)x, labels, ldt,
                                                       (const float *)dy, (float *)dx, rows,
                                                       classes, ub);
    else if (dt == TFL_DTYPE_FLOAT64)
        sparse_grad_kernel<<<b, TFLCU_THREADS, 0, s>>>((const double *)x, labels, ldt,
                                                       (const double *)dy, (double *)dx, rows,
                                                       classes, ub);
    else
        return -1;
    return tflcu_status();
}

extern "C" int64_t tflcu_bn_train_blocks(int64_t rows, int64_t c)
{
    return c > 0 ? tflcu_bn_train::bnt_geometry(rows, c).nb : 0;
}

extern "C" int tflcu_batch_moments(int dt, const void *x, void *out, double *part, int64_t rows,
                                   int64_t c, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (c <= 0) return 0;
    if (dt == TFL_DTYPE_FLOAT32)
        return batch_moments((const float *)x, (float *)out, part, rows, c, s);
    if (dt == TFL_DTYPE_FLOAT64)
        return batch_moments((const double *)x, (double *)out, part, rows, c, s);
    return -1;
}

extern "C" int tflcu_batch_norm_param_grad(int dt, const void *dy, const void *x,
                                           const void *moments, void *out, double *part,
                                           int64_t rows, int64_t c, double eps, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (c <= 0) return 0;
    if (dt == TFL_DTYPE_FLOAT32)
        return bn_param_grad((const float *)dy, (const float *)x, (const float *)moments,
                             (float *)out, part, rows, c, eps, s);
    if (dt == TFL_DTYPE_FLOAT64)
        return bn_param_grad((const double *)dy, (const double *)x, (const double *)moments,
                             (double *)out, part, rows, c, eps, s);
    return -1;
}

extern "C" int tflcu_batch_norm_training_grad(int dt, const void *dy, const void *x,
                                              const void *moments, const void *gamma,
                                              const void *sums, void *dx, void *coef, int64_t rows,
                                              int64_t c, double eps, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (rows <= 0 || c <= 0) return 0;
    if (dt == TFL_DTYPE_FLOAT32)
        return bn_training_grad((const float *)dy, (const float *)x, (const float *)moments,
                                (const float *)gamma, (const float *)sums, (float *)dx,
                                (float *)coef, rows, c, eps, s);
    if (dt == TFL_DTYPE_FLOAT64)
        return bn_training_grad((const double *)dy, (const double *)x, (const double *)moments,
                                (const double *)gamma, (const double *)sums, (double *)dx,
                                (double *)coef, rows, c, eps, s);
    return -1;
}
