/*
 * framework/cuda/bn_train_elems.cuh: the arithmetic of the training-mode BatchNormalization
 * kernels (BatchMoments, BatchNormParamGrad, BatchNormTrainingGrad; k_reduce.cu), as
 * functions that nvcc compiles
 * for the GPU and for the host, where tests/test_bn_train_elems.cu (this folder) runs them in
 * the kernels' order against the CPU's kernels (framework/cpu/k_norm.c) without a GPU.
 *
 * Layout: x is (rows, c) row-major. A block of TFLCU_BNT_THREADS threads covers tx channels
 * (consecutive threads, consecutive channels: coalesced) and rb rows, its ty = threads / tx
 * row lanes striding over them; blockIdx.x picks the channels, blockIdx.y the rows. The
 * blocking (bnt_geometry) depends on the shape alone, never on the GPU. Each thread sums its
 * rows in double, the row lanes are combined by a fixed tree in shared memory, and each block
 * writes its partials [block][2][c] (doubles) to a workspace; a second kernel combines the
 * blocks of each channel in a fixed order (merge lanes over the blocks, then a tree: see
 * TFLCU_BNT_MERGE_THREADS). No atomics: every run gives the same bits.
 *   BatchMoments: per block its mean and its sum of squared deviations about that mean, each
 *   thread's from groups of rows held in registers (bnt_thread_moments: one pass over x), the
 *   threads' and then the blocks' merged by Chan et al.'s formula, as the CPU merges its
 *   blocks (the CPU in block order).
 *   BatchNormParamGrad: per block sum(dy) and sum(dy (x - mean)), merged as the moments'
 *   blocks, giving dgamma = rstd sum(dy (x - mean)) and dbeta = sum(dy).
 *   BatchNormTrainingGrad: from those two, the coefficients a, b, d per channel (rounded to
 *   the dtype, as the CPU's), then dx = dy a - (x - m) b - d over the same grid.
 * Needs only <stdint.h> and <math.h>.
 */
#ifndef TFL_CUDA_BN_TRAIN_ELEMS_CUH
#define TFL_CUDA_BN_TRAIN_ELEMS_CUH

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define TFLCU_BNT_HD __host__ __device__ __forceinline__
#else
#define TFLCU_BNT_HD inline
#endif
#ifdef __CUDA_ARCH__
#define TFLCU_BNT_UNROLL _Pragma("unroll")
#else
#define TFLCU_BNT_UNROLL
#endif

/* threads per block (a power of two) */
#define TFLCU_BNT_THREADS 256
/* at most this many blocks of rows (the partial sums: blocks x 2 x c doubles) */
#define TFLCU_BNT_MAX_ROW_BLOCKS 1024
/* every row lane sums at least this many rows of a full block (one group of
 * TFLCU_BNT_GROUP) */
#define TFLCU_BNT_MIN_LANE_ROWS 8

namespace tflcu_bn_train
{

typedef struct geometry {
    int tx, ty; /* channels and row lanes of a block: tx ty = TFLCU_BNT_THREADS */
    int64_t cb; /* blocks along the channels: ceil(c / tx) */
    int64_t rb; /* rows of a block (a multiple of ty; the last block may have fewer) */
    int64_t nb; /* blocks along the rows: ceil(rows / rb), 0 without rows */
} geometry;

/* the blocking of x (rows, c), c >= 1: tx the smallest power of two >= c, at most 32; rb
 * enough rows for at most TFLCU_BNT_MAX_ROW_BLOCKS blocks, at least TFLCU_BNT_MIN_LANE_ROWS
 * per row lane */
TFLCU_BNT_HD geometry bnt_geometry(int64_t rows, int64_t c)
{
    geometry g;
    g.tx = 1;
    while (g.tx < 32 && g.tx < c)
        g.tx *= 2;
    g.ty = TFLCU_BNT_THREADS / g.tx;
    g.cb = (c + g.tx - 1) / g.tx;
    int64_t rb = (rows + TFLCU_BNT_MAX_ROW_BLOCKS - 1) / TFLCU_BNT_MAX_ROW_BLOCKS;
    if (rb < (int64_t)g.ty * TFLCU_BNT_MIN_LANE_ROWS) rb = (int64_t)g.ty * TFLCU_BNT_MIN_LANE_ROWS;
    g.rb = (rb + g.ty - 1) / g.ty * g.ty;
    g.nb = rows > 0 ? (rows + g.rb - 1) / g.rb : 0;
    return g;
}

/* the rows [r0, r1) of block b */
TFLCU_BNT_HD void bnt_block_rows(const geometry &g, int64_t rows, int64_t b, int64_t *r0,
                                 int64_t *r1)
{
    *r0 = b * g.rb;
    *r1 = rows - *r0 < g.rb ? rows : *r0 + g.rb;
}

/* (n, m, q) (a count, a mean, a sum of squared deviations) merged with (nb, mb, qb) by Chan
 * et al.'s formula; an empty side takes the other's values */
TFLCU_BNT_HD void bnt_chan(double *n, double *m, double *q, double nb, double mb, double qb)
{
    if (nb == 0) return;
    if (*n == 0) {
        *n = nb;
        *m = mb;
        *q = qb;
        return;
    }
    const double n2 = *n + nb, d = mb - *m, w = nb / n2;
    *m += d * w;
    *q += qb + d * d * (*n * w);
    *n = n2;
}

/* rows a thread reads at once in BatchMoments (registers) */
#define TFLCU_BNT_GROUP 8

/* one thread's count, mean and sum of squared deviations of x[r][j] over its rows r, r + step,
 * ... < r1: groups of TFLCU_BNT_GROUP of them read at once, each group's mean and squared
 * deviations exact in double (two passes over registers), the groups merged by bnt_chan in
 * order. One pass over memory. */
template <typename T>
TFLCU_BNT_HD void bnt_thread_moments(const T *x, int64_t c, int64_t j, int64_t r, int64_t r1,
                                     int step, double *n, double *m, double *q)
{
    *n = *m = *q = 0;
    for (; r < r1; r += (int64_t)step * TFLCU_BNT_GROUP) {
        double v[TFLCU_BNT_GROUP]; /* unrolled, with predicates: registers, not memory */
        int k = 0;
        TFLCU_BNT_UNROLL
        for (int i = 0; i < TFLCU_BNT_GROUP; i++) {
            const int64_t ri = r + (int64_t)i * step;
            v[i] = ri < r1 ? (double)x[ri * c + j] : 0.0;
            k += ri < r1;
        }
        double s = 0, d2 = 0;
        TFLCU_BNT_UNROLL
        for (int i = 0; i < TFLCU_BNT_GROUP; i++)
            if (i < k) s += v[i];
        const double mean = s / (double)k;
        TFLCU_BNT_UNROLL
        for (int i = 0; i < TFLCU_BNT_GROUP; i++) {
            const double d = v[i] - mean;
            if (i < k) d2 += d * d;
        }
        bnt_chan(n, m, q, (double)k, mean, d2);
    }
}

/* one thread's sum(dy) and sum(dy (x - m)) over the same rows; m: channel j's mean */
template <typename T>
TFLCU_BNT_HD void bnt_grad_sums(const T *dy, const T *x, T m, int64_t c, int64_t j, int64_t r,
                                int64_t r1, int step, double *sg, double *sgx)
{
    double a = 0, b = 0;
    for (; r < r1; r += step) {
        const double g = (double)dy[r * c + j];
        a += g;
        b += g * ((double)x[r * c + j] - (double)m);
    }
    *sg = a;
    *sgx = b;
}

/* one step of the block's tree over its row lanes: s holds a value per thread (thread t:
 * channel t % tx, row lane t / tx); at step w (ty / 2, ty / 4, ..., 1) lane l < w adds lane
 * l + w. After the last step lane 0 (s[0 .. tx)) holds the block's sums. On the GPU every
 * thread runs its own t with a barrier after each step; the host runs all t in turn. */
TFLCU_BNT_HD void bnt_tree_step(double *s, int t, int tx, int w)
{
    if (t / tx < w) s[t] += s[t + w * tx];
}

/*
 * The merge kernels: one block of TFLCU_BNT_MERGE_THREADS threads per block of tx channels,
 * lanes = TFLCU_BNT_MERGE_THREADS / tx merge lanes. Lane l folds the row blocks l, l + lanes,
 * l + 2 lanes, ... in that order, then the lanes are combined by a fixed tree (lane l < w
 * takes lane l + w, w = lanes / 2, ..., 1), as the partial sums' tree: lane 0 ends with the
 * channel's whole. A fixed order, parallel over the blocks.
 */
#define TFLCU_BNT_MERGE_THREADS 1024

/* lane `lane` of `lanes`'s fold of channel j's block moments p[nb][2][c] (block means, sums
 * of squared deviations), with the blocks' row counts: (n, m, q) */
TFLCU_BNT_HD void bnt_moments_fold(const double *p, const geometry &g, int64_t rows, int64_t c,
                                   int64_t j, int lane, int lanes, double *n, double *m, double *q)
{
    *n = *m = *q = 0;
    for (int64_t b = lane; b < g.nb; b += lanes) {
        int64_t r0, r1;
        bnt_block_rows(g, rows, b, &r0, &r1);
        bnt_chan(n, m, q, (double)(r1 - r0), p[2 * c * b + j], p[2 * c * b + c + j]);
    }
}

/* one step of the merge tree over the lanes' (n, m, q) (thread t: channel t % tx, lane
 * t / tx), as bnt_tree_step */
TFLCU_BNT_HD void bnt_moments_tree_step(double *n, double *m, double *q, int t, int tx, int w)
{
    if (t / tx < w) bnt_chan(&n[t], &m[t], &q[t], n[t + w * tx], m[t + w * tx], q[t + w * tx]);
}

/* lane `lane`'s sums of channel j's block sums p[nb][2][c] (sum(dy), sum(dy (x - m))) */
TFLCU_BNT_HD void bnt_grad_fold(const double *p, const geometry &g, int64_t c, int64_t j, int lane,
                                int lanes, double *sg, double *sgx)
{
    double a = 0, b = 0;
    for (int64_t k = lane; k < g.nb; k += lanes) {
        a += p[2 * c * k + j];
        b += p[2 * c * k + c + j];
    }
    *sg = a;
    *sgx = b;
}

/* BatchNormParamGrad's (2, c) from a channel's sum(dy) and sum(dy (x - m)): dgamma =
 * sum(dy xhat) = rstd sum(dy (x - m)), dbeta = sum(dy), rstd = 1 / sqrt(var + eps), each
 * rounded to T (the CPU's) */
template <typename T>
TFLCU_BNT_HD void bnt_param_grads(double sg, double sgx, T var, double eps, T *dgamma, T *dbeta)
{
    *dgamma = (T)(sgx / sqrt((double)var + eps));
    *dbeta = (T)sg;
}

/* the coefficients of dx = dy a - (x - m) b - d from the channel's BatchNormParamGrad
 * (dgamma = sum(dy xhat), dbeta = sum(dy)): rstd = 1 / sqrt(var + eps), a = gamma rstd,
 * b = a rstd dgamma / rows, d = a dbeta / rows, in double, each rounded to T (the CPU's) */
template <typename T>
TFLCU_BNT_HD void bnt_grad_coefs(T dgamma, T dbeta, int64_t rows, T var, T gamma, double eps,
                                 T *a, T *b, T *d)
{
    const double n = (double)rows, rs = 1.0 / sqrt((double)var + eps);
    const double ad = (double)gamma * rs;
    *a = (T)ad;
    *b = (T)(ad * rs * ((double)dgamma / n));
    *d = (T)(ad * ((double)dbeta / n));
}

/* one element of dx */
template <typename T> TFLCU_BNT_HD T bnt_grad_elem(T dy, T x, T m, T a, T b, T d)
{
    return dy * a - (x - m) * b - d;
}

} // namespace tflcu_bn_train

#endif /* TFL_CUDA_BN_TRAIN_ELEMS_CUH */
