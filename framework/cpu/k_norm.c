/*
 * framework/cpu/k_norm.c: CPU kernels of BatchNorm, the training-mode BatchNorm ops
 * (BatchMoments, BatchNormTraining, BatchNormParamGrad, BatchNormTrainingGrad), LayerNorm, its
 * gradient ops (LayerNormGrad, LayerNormParamGrad) and Dropout (ops/norm.c has the checks, tapeflow/ops.h the formulas). float16/bfloat16 come
 * here as float32.
 *
 * BatchNorm: x (..., C) is read as (rows, C) and the parameters as (C). Per channel
 *     a[c] = scale[c] / sqrt(variance[c] + epsilon)        (in double, rounded once)
 * then one pass y = (x - mean[c]) * a[c] + offset[c]: OpenMP over rows for big tensors, the
 * loop over channels plain and vectorizable. Subtracting the mean before scaling keeps x
 * close to a large mean exact (TensorFlow's x * a + (offset - mean * a) cancels there).
 *
 * LayerNorm and LayerNormGrad: x (..., C) is read as (rows, C), gamma and beta as (C). Per
 * row, mean and variance (biased, two passes) are summed in double for every dtype, in eight
 * interleaved partial sums combined in a fixed order (they vectorize, and the result never
 * depends on threads), and rstd = 1 / sqrt(variance + epsilon) is rounded once to the dtype;
 * the elementwise pass runs in the dtype. OpenMP over rows for big tensors. LayerNormParamGrad
 * sums dy xhat and dy per feature in double over blocks of 64 rows, added in block order.
 *
 * Dropout: element i's uniform is the top 24 bits of word i%4 of the Philox block of i/4,
 * ctr = (lo(i/4), hi(i/4), 0, "DROP"), for every dtype: each block is independent, so the
 * mask never depends on threads or chunking, and float32 and float64 drop the same elements.
 * Blocks are made 64 at a time with Philox's rounds across them (they vectorize), and the
 * keep test is an integer compare; on 1e7 float32 elements dropout costs about 3 copies.
 */
#include "ops/op.h"
#include "core_api/philox.h"
#include "cpu.h"
#include "kernels.h"

#define DROP_WORD 0x44524F50u /* "DROP": ctr[3] of dropout's blocks */

static int threads_for(const tfl__kcall *k, int64_t elements)
{
    return elements >= TFL_CPU_PARALLEL_MIN ? k->ctx->num_threads : 1;
}

/* ---- BatchNorm ------------------------------------------------------------------------------ */

/* y = (x - m) a + o over one row of c; and over rows: y, x (rows, c); m, a, o (c) */
#define BN_ROWS(T)                                                                               \
    TFL_WIDE_LOOPS static void bn_row_##T(const T *restrict x, const T *restrict m,             \
                                          const T *restrict a, const T *restrict o,             \
                                          T *restrict y, int64_t c)                              \
    {                                                                                            \
        for (int64_t j = 0; j < c; j++) y[j] = (x[j] - m[j]) * a[j] + o[j];                      \
    }                                                                                            \
    static void bn_rows_##T(const T *x, const T *m, const T *a, const T *o, T *y, int64_t rows, \
                            int64_t c, int threads)                                              \
    {                                                                                            \
        _Pragma("omp parallel for num_threads(threads) if (threads > 1)")                       \
        for (int64_t r = 0; r < rows; r++) bn_row_##T(x + r * c, m, a, o, y + r * c, c);          \
    }
BN_ROWS(float)
BN_ROWS(double)

/* y = (x - m) a + o per channel, a = s / sqrt(v + eps) (in double, rounded to the dtype);
 * x, m, v, o, s contiguous (x (rows, c), the others (c)) */
static tfl_status bn_apply(const tfl__kcall *k, const tfl_tensor *x, const void *m, const void *v,
                           const void *o, const void *s, void *y)
{
    const tfl_dtype dt = (tfl_dtype)x->dtype;
    const int64_t c = x->shape[x->rank - 1], rows = c ? x->numel / c : 0;
    const double eps = ((const tfl__batch_norm_attrs *)k->attrs)->epsilon;
    tfl_tensor *a = tfl__tensor_alloc(k->ctx, k->dev, dt, 1, &c);
    if (!a) return k->ctx->err_code;
    const int threads = threads_for(k, x->numel);
    if (dt == TFL_DTYPE_FLOAT32) {
        const float *vf = v, *sf = s;
        float *ad = tfl__data(a);
        for (int64_t j = 0; j < c; j++)
            ad[j] = (float)((double)sf[j] / sqrt((double)vf[j] + eps));
        bn_rows_float(tfl__data(x), m, ad, o, y, rows, c, threads);
    } else {
        const double *vd = v, *sd = s;
        double *ad = tfl__data(a);
        for (int64_t j = 0; j < c; j++) ad[j] = sd[j] / sqrt(vd[j] + eps);
        bn_rows_double(tfl__data(x), m, ad, o, y, rows, c, threads);
    }
    tfl_tensor_release(a);
    return TFL_OK;
}

/* ---- BatchMoments, BatchNormTraining, BatchNormParamGrad, BatchNormTrainingGrad ------------- */

/*
 * x (rows, c) is summed over rows in blocks of about 16k elements (a tile of at most 1024
 * channels by 16 or more rows; the blocking depends on the shape alone), each block's sums in
 * double, then each channel's blocks combined in order: the result never depends on threads.
 * BatchMoments: per block its mean and the sum of squares about it (two passes over a block
 * that stays in cache), combined by Chan's formula, so the variance is as exact as a two-pass
 * one. BatchNormParamGrad: per block sum(dy) and sum(dy (x - mean)); BatchNormTrainingGrad,
 * given those sums, one pass dx = dy a - (x - mean) b - d with per-channel a, b, d.
 */
enum { BN_BLOCK = 16384 };

/* channels of a tile: all of them up to BN_TILE, else tiles of BN_TILE; a block is a tile's
 * BN_BLOCK / tile rows (at least 16), so its sums' scratch stays at most a quarter of a
 * float32 x however wide the channels */
enum { BN_TILE = 1024 };

static int64_t tile_width(int64_t c)
{
    return c < BN_TILE ? (c ? c : 1) : BN_TILE;
}

static int64_t block_rows(int64_t c)
{
    return BN_BLOCK / tile_width(c);
}

#define BN_TRAIN_KERNELS(T)                                                                      \
    /* a block of nr rows (stride ld) by c channels: its mean and its sum of squared       \
     * deviations into mb, qb */                                                                 \
    TFL_WIDE_LOOPS static void moments_block_##T(const T *restrict x, int64_t nr, int64_t c,    \
                                                 int64_t ld, double *restrict mb,               \
                                                 double *restrict qb)                            \
    {                                                                                            \
        for (int64_t j = 0; j < c; j++) mb[j] = qb[j] = 0;                                       \
        for (int64_t r = 0; r < nr; r++)                                                         \
            for (int64_t j = 0; j < c; j++) mb[j] += (double)x[r * ld + j];                      \
        for (int64_t j = 0; j < c; j++) mb[j] /= (double)nr;                                     \
        for (int64_t r = 0; r < nr; r++)                                                         \
            for (int64_t j = 0; j < c; j++) {                                                    \
                const double d = (double)x[r * ld + j] - mb[j];                                  \
                qb[j] += d * d;                                                                  \
            }                                                                                    \
    }                                                                                            \
    /* the same block's sum(dy) and sum(dy (x - m)) into sg, sgx */                              \
    TFL_WIDE_LOOPS static void grad_block_##T(const T *restrict dy, const T *restrict x,        \
                                              const T *restrict m, int64_t nr, int64_t c,       \
                                              int64_t ld, double *restrict sg,                  \
                                              double *restrict sgx)                              \
    {                                                                                            \
        for (int64_t j = 0; j < c; j++) sg[j] = sgx[j] = 0;                                      \
        for (int64_t r = 0; r < nr; r++)                                                         \
            for (int64_t j = 0; j < c; j++) {                                                    \
                const double g = (double)dy[r * ld + j];                                         \
                sg[j] += g;                                                                      \
                sgx[j] += g * ((double)x[r * ld + j] - (double)m[j]);                            \
            }                                                                                    \
    }                                                                                            \
    /* dx = dy a - (x - m) b - d, one row; and row by row */                                  \
    TFL_WIDE_LOOPS static void grad_row_##T(const T *restrict dy, const T *restrict x,          \
                                            const T *restrict m, const T *restrict a,           \
                                            const T *restrict b, const T *restrict d,           \
                                            T *restrict dx, int64_t c)                           \
    {                                                                                            \
        for (int64_t j = 0; j < c; j++) dx[j] = dy[j] * a[j] - (x[j] - m[j]) * b[j] - d[j];      \
    }                                                                                            \
    static void grad_rows_##T(const T *dy, const T *x, const T *m, const T *a, const T *b,      \
                              const T *d, T *dx, int64_t rows, int64_t c, int threads)           \
    {                                                                                            \
        _Pragma("omp parallel for num_threads(threads) if (threads > 1)")                       \
        for (int64_t r = 0; r < rows; r++)                                                       \
            grad_row_##T(dy + r * c, x + r * c, m, a, b, d, dx + r * c, c);                      \
    }
BN_TRAIN_KERNELS(float)
BN_TRAIN_KERNELS(double)

/* k's first n inputs, contiguous (tmp[i]: a copy to release, or NULL) */
static tfl_status contiguous_inputs(const tfl__kcall *k, int n, const tfl_tensor **in,
                                    tfl_tensor **tmp)
{
    for (int i = 0; i < n; i++) {
        in[i] = tfl__cpu_contiguous(k->ctx, k->in[i], &tmp[i]);
        if (!in[i]) return k->ctx->err_code;
    }
    return TFL_OK;
}

static void release_all(tfl_tensor **t, int n)
{
    for (int i = 0; i < n; i++) tfl_tensor_release(t[i]);
}

/* x (rows, c) summed in blocks of block_rows(c) rows by tile_width(c) channels into a new
 * float64 tensor of nb row blocks of 2 c sums each (block b, channel j: p[2 c b + j] and
 * p[2 c b + c + j]; at most a quarter of a float32 x), *nb set: BatchMoments' (dy NULL) or
 * BatchNormParamGrad's. NULL with the error kept. */
static tfl_tensor *block_sums(const tfl__kcall *k, const tfl_tensor *x, const void *dy,
                              const void *m, int64_t *nb_out)
{
    const bool f32 = x->dtype == TFL_DTYPE_FLOAT32;
    const int64_t c = x->shape[x->rank - 1], rows = c ? x->numel / c : 0;
    const int64_t br = block_rows(c), tw = tile_width(c), nt = (c + tw - 1) / tw;
    const int64_t nb = rows ? (rows + br - 1) / br : 1;
    int64_t len, items;
    if (tfl__mul_overflow_i64(nb, 2 * c, &len) || tfl__mul_overflow_i64(nb, nt, &items)) {
        tfl__set_error(k->ctx, TFL_RESOURCE_EXHAUSTED, "%s: too many sums",
                       tfl__op_defs[k->op].name);
        return NULL;
    }
    tfl_tensor *part = tfl__tensor_alloc(k->ctx, k->dev, TFL_DTYPE_FLOAT64, 1, &len);
    if (!part) return NULL;
    double *p = tfl__data(part);
    const char *xd = tfl__data(x), *dd = dy;
    const size_t es = f32 ? sizeof(float) : sizeof(double);
    const int threads = threads_for(k, x->numel);
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (int64_t it = 0; it < items; it++) {
        const int64_t b = it / nt, j0 = it % nt * tw, ct = c - j0 < tw ? c - j0 : tw;
        const int64_t r0 = b * br, nr = rows - r0 < br ? rows - r0 : br;
        const size_t at = (size_t)(r0 * c + j0) * es;
        double *p0 = p + 2 * c * b + j0, *p1 = p0 + c;
        if (!dy && f32) moments_block_float((const float *)(xd + at), nr, ct, c, p0, p1);
        else if (!dy) moments_block_double((const double *)(xd + at), nr, ct, c, p0, p1);
        else if (f32)
            grad_block_float((const float *)(dd + at), (const float *)(xd + at),
                             (const float *)m + j0, nr, ct, c, p0, p1);
        else
            grad_block_double((const double *)(dd + at), (const double *)(xd + at),
                              (const double *)m + j0, nr, ct, c, p0, p1);
    }
    *nb_out = nb;
    return part;
}

/* element j of a contiguous float32 or float64 array; and its store */
static double get(const void *p, bool f32, int64_t j)
{
    return f32 ? ((const float *)p)[j] : ((const double *)p)[j];
}

static void put(void *p, bool f32, int64_t j, double v)
{
    if (f32) ((float *)p)[j] = (float)v;
    else ((double *)p)[j] = v;
}

/* BatchMoments (x) -> (2, c): Chan et al.'s merge of the blocks' means and squared
 * deviations, in order; a batch of no rows gives NaN */
static tfl_status k_batch_moments(const tfl__kcall *k)
{
    const tfl_tensor *x;
    tfl_tensor *tmp = NULL, *part = NULL;
    tfl_status st = contiguous_inputs(k, 1, &x, &tmp);
    int64_t nb = 0;
    if (st == TFL_OK && !(part = block_sums(k, x, NULL, NULL, &nb))) st = k->ctx->err_code;
    if (st == TFL_OK) {
        const bool f32 = x->dtype == TFL_DTYPE_FLOAT32;
        const int64_t c = x->shape[x->rank - 1], rows = c ? x->numel / c : 0, br = block_rows(c);
        double *p = tfl__data(part), *mean = p, *q = p + c; /* block 0's, becoming the whole's */
        const int64_t tw = tile_width(c), nt = (c + tw - 1) / tw;
        const int threads = threads_for(k, nb * c);
#pragma omp parallel for num_threads(threads) if (threads > 1)
        for (int64_t t = 0; t < nt; t++) { /* each channel's blocks in order */
            const int64_t j1 = (t + 1) * tw < c ? (t + 1) * tw : c;
            for (int64_t b = 1; b < nb; b++) {
                const int64_t nr = rows - b * br < br ? rows - b * br : br;
                const double na = (double)(b * br), n = na + (double)nr;
                const double w = (double)nr / n, cross = na * (double)nr / n;
                const double *mb = p + 2 * c * b, *qb = mb + c;
                for (int64_t j = t * tw; j < j1; j++) {
                    const double d = mb[j] - mean[j];
                    mean[j] += d * w;
                    q[j] += qb[j] + d * d * cross;
                }
            }
        }
        void *out = tfl__data(k->out);
        for (int64_t j = 0; j < c; j++) {
            put(out, f32, j, rows ? mean[j] : NAN);
            put(out, f32, c + j, rows ? q[j] / (double)rows : NAN);
        }
    }
    tfl_tensor_release(part);
    tfl_tensor_release(tmp);
    return st;
}

/* BatchNormTraining (x, moments, gamma, beta): BatchNorm's pass with the moments */
static tfl_status k_batch_norm_training(const tfl__kcall *k)
{
    const tfl_tensor *in[4];
    tfl_tensor *tmp[4] = {NULL};
    tfl_status st = contiguous_inputs(k, 4, in, tmp);
    if (st == TFL_OK) {
        const char *mo = tfl__data(in[1]);
        const size_t row = (size_t)in[1]->shape[1] * tfl_dtype_size((tfl_dtype)in[1]->dtype);
        st = bn_apply(k, in[0], mo, mo + row, tfl__data(in[3]), tfl__data(in[2]),
                      tfl__data(k->out));
    }
    release_all(tmp, 4);
    return st;
}

/* BatchNormParamGrad (dy, x, moments) -> (2, c): sum(dy xhat) = rstd sum(dy (x - m)), and
 * sum(dy), the blocks' sums added in order */
static tfl_status k_batch_norm_param_grad(const tfl__kcall *k)
{
    const tfl_tensor *in[3];
    tfl_tensor *tmp[3] = {NULL}, *part = NULL;
    tfl_status st = contiguous_inputs(k, 3, in, tmp);
    int64_t nb = 0;
    if (st == TFL_OK &&
        !(part = block_sums(k, in[1], tfl__data(in[0]), tfl__data(in[2]), &nb)))
        st = k->ctx->err_code;
    if (st == TFL_OK) {
        const bool f32 = in[1]->dtype == TFL_DTYPE_FLOAT32;
        const int64_t c = in[1]->shape[in[1]->rank - 1];
        const double eps = ((const tfl__batch_norm_attrs *)k->attrs)->epsilon;
        double *p = tfl__data(part);
        const int64_t tw = tile_width(c), nt = (2 * c + tw - 1) / tw;
        const int threads = threads_for(k, nb * c);
#pragma omp parallel for num_threads(threads) if (threads > 1)
        for (int64_t t = 0; t < nt; t++) { /* each sum's blocks in order */
            const int64_t j1 = (t + 1) * tw < 2 * c ? (t + 1) * tw : 2 * c;
            for (int64_t b = 1; b < nb; b++)
                for (int64_t j = t * tw; j < j1; j++) p[j] += p[2 * c * b + j];
        }
        const void *mo = tfl__data(in[2]);
        void *out = tfl__data(k->out);
        for (int64_t j = 0; j < c; j++) {
            put(out, f32, j, p[c + j] / sqrt(get(mo, f32, c + j) + eps));
            put(out, f32, c + j, p[j]);
        }
    }
    tfl_tensor_release(part);
    release_all(tmp, 3);
    return st;
}

/* BatchNormTrainingGrad (dy, x, moments, gamma, sums), sums = BatchNormParamGrad's:
 *   dx = gamma rstd (dy - mean(dy) - xhat mean(dy xhat)) = dy a - (x - m) b - d
 * with a = gamma rstd, b = a rstd mean(dy xhat), d = a mean(dy) per channel */
static tfl_status k_batch_norm_training_grad(const tfl__kcall *k)
{
    const tfl_tensor *in[5];
    tfl_tensor *tmp[5] = {NULL}, *coef = NULL;
    tfl_status st = contiguous_inputs(k, 5, in, tmp);
    const tfl_tensor *x = in[1];
    const int64_t c = st == TFL_OK ? x->shape[x->rank - 1] : 0, n3 = 3 * c;
    if (st == TFL_OK && !(coef = tfl__tensor_alloc(k->ctx, k->dev, (tfl_dtype)x->dtype, 1, &n3)))
        st = k->ctx->err_code;
    if (st == TFL_OK) {
        const bool f32 = x->dtype == TFL_DTYPE_FLOAT32;
        const int64_t rows = c ? x->numel / c : 0;
        const double eps = ((const tfl__batch_norm_attrs *)k->attrs)->epsilon, n = (double)rows;
        const void *mo = tfl__data(in[2]), *sums = tfl__data(in[4]);
        void *cf = tfl__data(coef);
        for (int64_t j = 0; j < c; j++) {
            const double rs = 1.0 / sqrt(get(mo, f32, c + j) + eps);
            const double a = get(tfl__data(in[3]), f32, j) * rs;
            put(cf, f32, j, a);
            put(cf, f32, c + j, a * rs * (get(sums, f32, j) / n));
            put(cf, f32, 2 * c + j, a * (get(sums, f32, c + j) / n));
        }
        const int threads = threads_for(k, x->numel);
        const void *dy = tfl__data(in[0]);
        if (f32) {
            const float *f = cf;
            grad_rows_float(dy, tfl__data(x), mo, f, f + c, f + 2 * c, tfl__data(k->out), rows, c,
                            threads);
        } else {
            const double *d = cf;
            grad_rows_double(dy, tfl__data(x), mo, d, d + c, d + 2 * c, tfl__data(k->out), rows, c,
                             threads);
        }
    }
    tfl_tensor_release(coef);
    release_all(tmp, 5);
    return st;
}

static tfl_status k_batch_norm(const tfl__kcall *k)
{
    const tfl_tensor *in[5];
    tfl_tensor *tmp[5] = {NULL};
    tfl_status st = contiguous_inputs(k, 5, in, tmp);
    if (st == TFL_OK)
        st = bn_apply(k, in[0], tfl__data(in[1]), tfl__data(in[2]), tfl__data(in[3]),
                      tfl__data(in[4]), tfl__data(k->out));
    release_all(tmp, 5);
    return st;
}

/* ---- LayerNorm and LayerNormGrad ------------------------------------------------------------ */

/* the terms summed: x, (x - mean)^2, g = dy gamma, g (x - mean) */
#define LN_X(j) x[j]
#define LN_SQ(j) (((double)x[j] - m) * ((double)x[j] - m))
#define LN_G(j) ((double)dy[j] * (double)ga[j])
#define LN_GX(j) ((double)dy[j] * (double)ga[j] * ((double)x[j] - m))
/* two interleaved sums of n terms A(j), B(j) in one pass, each as TFL_LANE_SUM sums it (the
 * same lanes, the same order, so the same results as two passes) */
#define LN_LANE_SUM2(ra, rb, n, A, B)                                                            \
    do {                                                                                         \
        double a_[TFL_SUM_LANES] = {0}, b_[TFL_SUM_LANES] = {0};                                 \
        int64_t j_ = 0;                                                                          \
        for (; j_ + TFL_SUM_LANES <= (n); j_ += TFL_SUM_LANES) {                                 \
            _Pragma("omp simd") /* as TFL_LANE_SUM's */                                          \
            for (int l_ = 0; l_ < TFL_SUM_LANES; l_++) {                                         \
                a_[l_] += (double)(A(j_ + l_));                                                  \
                b_[l_] += (double)(B(j_ + l_));                                                  \
            }                                                                                    \
        }                                                                                        \
        for (int l_ = 0; j_ < (n); j_++, l_++) {                                                 \
            a_[l_] += (double)(A(j_));                                                           \
            b_[l_] += (double)(B(j_));                                                           \
        }                                                                                        \
        for (int w_ = TFL_SUM_LANES / 2; w_ >= 1; w_ /= 2)                                       \
            for (int l_ = 0; l_ < w_; l_++) {                                                    \
                a_[l_] += a_[l_ + w_];                                                           \
                b_[l_] += b_[l_ + w_];                                                           \
            }                                                                                    \
        (ra) = a_[0];                                                                            \
        (rb) = b_[0];                                                                            \
    } while (0)

#define LN_KERNELS(T)                                                                            \
    /* the row's mean and rstd = 1 / sqrt(variance + eps), n >= 1 */                            \
    TFL_WIDE_LOOPS static void ln_stats_##T(const T *restrict x, int64_t n, double eps, double *mean,          \
                             double *rstd)                                                       \
    {                                                                                            \
        double s, q;                                                                             \
        TFL_LANE_SUM(s, n, LN_X);                                                               \
        const double m = s / (double)n;                                                          \
        TFL_LANE_SUM(q, n, LN_SQ);                                                              \
        *mean = m;                                                                               \
        *rstd = 1.0 / sqrt(q / (double)n + eps);                                                 \
    }                                                                                            \
    /* y = (x - mean) rstd gamma + beta: one row, and row by row */                              \
    TFL_WIDE_LOOPS static void ln_fwd_row_##T(const T *restrict xr, const T *restrict ga,       \
                                              const T *restrict be, T *restrict yr, int64_t n,  \
                                              double eps)                                        \
    {                                                                                            \
        double m, rs;                                                                            \
        ln_stats_##T(xr, n, eps, &m, &rs);                                                       \
        const T mt = (T)m, rt = (T)rs;                                                           \
        for (int64_t j = 0; j < n; j++) yr[j] = (xr[j] - mt) * rt * ga[j] + be[j];              \
    }                                                                                            \
    static void ln_fwd_##T(const T *x, const T *ga, const T *be, T *y, int64_t rows, int64_t n, \
                           double eps, int threads)                                              \
    {                                                                                            \
        _Pragma("omp parallel for num_threads(threads) if (threads > 1)")                       \
        for (int64_t r = 0; r < rows; r++) ln_fwd_row_##T(x + r * n, ga, be, y + r * n, n, eps); \
    }                                                                                            \
    /* dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma, one row and row by row:        \
     * rstd (g - mean(g)) - (x - mean) b with b = mean(g (x - mean)) rstd^3; the sums of         \
     * ln_stats and those of g in two passes */                                                  \
    TFL_WIDE_LOOPS static void ln_bwd_row_##T(const T *restrict dy, const T *restrict x,        \
                                              const T *restrict ga, T *restrict dxr, int64_t n, \
                                              double eps)                                        \
    {                                                                                            \
        double s, q, sg, sgx;                                                                    \
        LN_LANE_SUM2(s, sg, n, LN_X, LN_G);                                                      \
        const double m = s / (double)n;                                                          \
        LN_LANE_SUM2(q, sgx, n, LN_SQ, LN_GX);                                                   \
        const double rs = 1.0 / sqrt(q / (double)n + eps);                                       \
        const T mt = (T)m, rt = (T)rs, a = (T)(sg / (double)n),                                  \
                b = (T)(sgx / (double)n * rs * rs * rs);                                         \
        for (int64_t j = 0; j < n; j++) dxr[j] = rt * (dy[j] * ga[j] - a) - (x[j] - mt) * b;    \
    }                                                                                            \
    static void ln_bwd_##T(const T *dy, const T *x, const T *ga, T *dx, int64_t rows, int64_t n, \
                           double eps, int threads)                                              \
    {                                                                                            \
        _Pragma("omp parallel for num_threads(threads) if (threads > 1)")                       \
        for (int64_t r = 0; r < rows; r++)                                                       \
            ln_bwd_row_##T(dy + r * n, x + r * n, ga, dx + r * n, n, eps);                       \
    }
LN_KERNELS(float)
LN_KERNELS(double)

/* in: LayerNorm (x, gamma, beta), LayerNormGrad (dy, x, gamma) */
static tfl_status k_layer_norm(const tfl__kcall *k)
{
    tfl_tensor *tmp[3] = {NULL};
    const tfl_tensor *in[3];
    tfl_status st = contiguous_inputs(k, 3, in, tmp);
    if (st == TFL_OK) {
        const tfl_tensor *x = k->op == TFL_OP_LAYER_NORM ? in[0] : in[1];
        const int64_t n = x->shape[x->rank - 1], rows = n ? x->numel / n : 0;
        const double eps = ((const tfl__layer_norm_attrs *)k->attrs)->epsilon;
        const int threads = threads_for(k, x->numel);
        const bool f32 = x->dtype == TFL_DTYPE_FLOAT32;
        void *out = tfl__data(k->out);
        const void *a = tfl__data(in[0]), *b = tfl__data(in[1]), *c = tfl__data(in[2]);
        if (k->op == TFL_OP_LAYER_NORM && f32)
            ln_fwd_float(a, b, c, out, rows, n, eps, threads);
        else if (k->op == TFL_OP_LAYER_NORM)
            ln_fwd_double(a, b, c, out, rows, n, eps, threads);
        else if (f32)
            ln_bwd_float(a, b, c, out, rows, n, eps, threads);
        else
            ln_bwd_double(a, b, c, out, rows, n, eps, threads);
    }
    release_all(tmp, 3);
    return st;
}

/* ---- LayerNormParamGrad --------------------------------------------------------------------- */

/* rows summed per block of LNP_ROWS (a blocking that depends on the shape alone), the blocks
 * added in order: the sums do not depend on the threads */
#define LNP_ROWS 64

#define LNP_KERNELS(T)                                                                           \
    /* s0 += dy xhat, s1 += dy over one row of n (xhat = (x - m) rs) */                          \
    TFL_WIDE_LOOPS static void lnp_row_##T(const T *restrict dy, const T *restrict x,           \
                                           int64_t n, double m, double rs,                      \
                                           double *restrict s0, double *restrict s1)             \
    {                                                                                            \
        for (int64_t j = 0; j < n; j++) {                                                        \
            const double g = (double)dy[j];                                                      \
            s0[j] += g * (((double)x[j] - m) * rs);                                              \
            s1[j] += g;                                                                          \
        }                                                                                        \
    }                                                                                            \
    static void lnp_block_##T(const T *dy, const T *x, int64_t nr, int64_t n, double eps,       \
                              double *s0, double *s1)                                            \
    {                                                                                            \
        for (int64_t j = 0; j < n; j++) s0[j] = s1[j] = 0;                                       \
        for (int64_t r = 0; r < nr; r++) {                                                       \
            double m, rs;                                                                        \
            ln_stats_##T(x + r * n, n, eps, &m, &rs);                                            \
            lnp_row_##T(dy + r * n, x + r * n, n, m, rs, s0, s1);                                \
        }                                                                                        \
    }
LNP_KERNELS(float)
LNP_KERNELS(double)

/* LayerNormParamGrad (dy, x) -> (2, n): sum(dy xhat), sum(dy) per feature over every row */
static tfl_status k_layer_norm_param_grad(const tfl__kcall *k)
{
    const tfl_tensor *in[2] = {NULL, NULL};
    tfl_tensor *tmp[2] = {NULL}, *part = NULL;
    tfl_status st = contiguous_inputs(k, 2, in, tmp);
    const tfl_tensor *x = in[1];
    const int64_t n = st == TFL_OK ? x->shape[x->rank - 1] : 0, rows = n ? x->numel / n : 0;
    const int64_t nb = (rows + LNP_ROWS - 1) / LNP_ROWS;
    int64_t len = 0;
    if (st == TFL_OK && tfl__mul_overflow_i64(nb ? nb : 1, 2 * n, &len))
        st = tfl__set_error(k->ctx, TFL_RESOURCE_EXHAUSTED, "%s: too many sums",
                            tfl__op_defs[k->op].name);
    if (st == TFL_OK && !(part = tfl__tensor_alloc(k->ctx, k->dev, TFL_DTYPE_FLOAT64, 1, &len)))
        st = k->ctx->err_code;
    if (st == TFL_OK) {
        const bool f32 = x->dtype == TFL_DTYPE_FLOAT32;
        const double eps = ((const tfl__layer_norm_attrs *)k->attrs)->epsilon;
        const char *dd = tfl__data(in[0]), *xd = tfl__data(x);
        const size_t es = f32 ? sizeof(float) : sizeof(double);
        double *p = tfl__data(part);
        int threads = threads_for(k, x->numel);
#pragma omp parallel for num_threads(threads) if (threads > 1)
        for (int64_t b = 0; b < nb; b++) {
            const int64_t r0 = b * LNP_ROWS, nr = rows - r0 < LNP_ROWS ? rows - r0 : LNP_ROWS;
            const size_t at = (size_t)(r0 * n) * es;
            double *s0 = p + 2 * n * b;
            if (f32)
                lnp_block_float((const float *)(dd + at), (const float *)(xd + at), nr, n, eps,
                                s0, s0 + n);
            else
                lnp_block_double((const double *)(dd + at), (const double *)(xd + at), nr, n,
                                 eps, s0, s0 + n);
        }
        if (nb == 0)
            for (int64_t j = 0; j < 2 * n; j++) p[j] = 0;
        threads = threads_for(k, nb * 2 * n);
#pragma omp parallel for num_threads(threads) if (threads > 1)
        for (int64_t j = 0; j < 2 * n; j++) /* each sum's blocks in order */
            for (int64_t b = 1; b < nb; b++) p[j] += p[2 * n * b + j];
        void *out = tfl__data(k->out);
        for (int64_t j = 0; j < 2 * n; j++) put(out, f32, j, p[j]);
    }
    tfl_tensor_release(part);
    release_all(tmp, 2);
    return st;
}

/* ---- Dropout -------------------------------------------------------------------------------- */

/*
 * The words of blocks b0 .. b0 + nb - 1 (nb <= CHUNK_BLOCKS), w[4 j + l] = word l of block
 * b0 + j: tfl__philox4x32_10's rounds run over the chunk's blocks side by side (structure of
 * arrays), so the compiler vectorizes the 32 x 32 -> 64-bit products across blocks.
 */
#define CHUNK_BLOCKS 64
static void drop_words(uint64_t b0, int nb, const uint32_t key[2], uint32_t *w)
{
    uint32_t c0[CHUNK_BLOCKS], c1[CHUNK_BLOCKS], c2[CHUNK_BLOCKS], c3[CHUNK_BLOCKS];
    for (int j = 0; j < nb; j++) {
        const uint64_t b = b0 + (uint64_t)j;
        c0[j] = (uint32_t)b;
        c1[j] = (uint32_t)(b >> 32);
        c2[j] = 0;
        c3[j] = DROP_WORD;
    }
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < TFL_PHILOX_ROUNDS; r++) {
        if (r > 0) {
            k0 += TFL_PHILOX_W0;
            k1 += TFL_PHILOX_W1;
        }
        for (int j = 0; j < nb; j++) {
            const uint64_t p0 = (uint64_t)TFL_PHILOX_M0 * c0[j];
            const uint64_t p1 = (uint64_t)TFL_PHILOX_M1 * c2[j];
            const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[j] ^ k0;
            const uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[j] ^ k1;
            c1[j] = (uint32_t)p1;
            c3[j] = (uint32_t)p0;
            c0[j] = n0;
            c2[j] = n2;
        }
    }
    for (int j = 0; j < nb; j++) {
        w[4 * j] = c0[j];
        w[4 * j + 1] = c1[j];
        w[4 * j + 2] = c2[j];
        w[4 * j + 3] = c3[j];
    }
}

/*
 * Element i is kept when u24(w[i]) >= rate: (w >> 8) 2^-24 and rate 2^24 are exact in double,
 * so that is (w >> 8) >= ceil(rate 2^24), an integer compare with the same outcome.
 */
static uint32_t keep_threshold(double rate)
{
    return (uint32_t)ceil(rate * 16777216.0);
}

/*
 * One chunk of m <= 4 CHUNK_BLOCKS elements: y = x / keep where (w >> 8) >= t, else +0. The
 * division is unconditional and the choice a bit mask on its result (a ?: select is left as a
 * branch, since the division may trap), so the loops vectorize.
 */
static inline void drop_chunk_f32(const float *restrict x, float *restrict y, int64_t m,
                                  const uint32_t *restrict w, uint32_t t, double keep)
{
    for (int64_t l = 0; l < m; l++) {
        const float q = (float)((double)x[l] / keep);
        uint32_t bits;
        memcpy(&bits, &q, sizeof bits);
        bits &= -(uint32_t)((w[l] >> 8) >= t);
        memcpy(&y[l], &bits, sizeof bits);
    }
}

static inline void drop_chunk_f64(const double *restrict x, double *restrict y, int64_t m,
                                  const uint32_t *restrict w, uint32_t t, double keep)
{
    for (int64_t l = 0; l < m; l++) {
        const double q = x[l] / keep;
        uint64_t bits;
        memcpy(&bits, &q, sizeof bits);
        bits &= -(uint64_t)((w[l] >> 8) >= t);
        memcpy(&y[l], &bits, sizeof bits);
    }
}

/* y = dropout(x) over n contiguous elements, a chunk of CHUNK_BLOCKS blocks at a time */
static void dropout_run(const void *x, void *y, bool f32, int64_t n, const uint32_t key[2],
                        double rate, int threads)
{
    const double keep = 1.0 - rate;
    const uint32_t t = keep_threshold(rate);
    const int64_t per = 4 * CHUNK_BLOCKS, chunks = (n + per - 1) / per;
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (int64_t c = 0; c < chunks; c++) {
        uint32_t w[4 * CHUNK_BLOCKS];
        const int64_t i0 = c * per, m = n - i0 < per ? n - i0 : per;
        drop_words((uint64_t)(i0 / 4), (int)((m + 3) / 4), key, w);
        if (f32)
            drop_chunk_f32((const float *)x + i0, (float *)y + i0, m, w, t, keep);
        else
            drop_chunk_f64((const double *)x + i0, (double *)y + i0, m, w, t, keep);
    }
}

static tfl_status k_dropout(const tfl__kcall *k)
{
    tfl_ctx *ctx = k->ctx;
    tfl_tensor *tx = NULL;
    const tfl_tensor *x = tfl__cpu_contiguous(ctx, k->in[0], &tx);
    if (!x) return ctx->err_code;
    const tfl__dropout_attrs *at = k->attrs;
    const uint32_t key[2] = {(uint32_t)at->key, (uint32_t)(at->key >> 32)};
    const int threads = threads_for(k, x->numel);
    dropout_run(tfl__data(x), tfl__data(k->out), x->dtype == TFL_DTYPE_FLOAT32, x->numel, key,
                at->rate, threads);
    tfl_tensor_release(tx);
    return TFL_OK;
}

#define M_FLOAT (TFL_DT(FLOAT32) | TFL_DT(FLOAT64))

const tfl__kernel tfl__cpu_norm_kernels[TFL_OP_COUNT] = {
    [TFL_OP_BATCH_NORM] = {k_batch_norm, M_FLOAT, NULL},
    [TFL_OP_DROPOUT] = {k_dropout, M_FLOAT, NULL},
    [TFL_OP_LAYER_NORM] = {k_layer_norm, M_FLOAT, NULL},
    [TFL_OP_LAYER_NORM_GRAD] = {k_layer_norm, M_FLOAT, NULL},
    [TFL_OP_LAYER_NORM_PARAM_GRAD] = {k_layer_norm_param_grad, M_FLOAT, NULL},
    [TFL_OP_BATCH_MOMENTS] = {k_batch_moments, M_FLOAT, NULL},
    [TFL_OP_BATCH_NORM_TRAINING] = {k_batch_norm_training, M_FLOAT, NULL},
    [TFL_OP_BATCH_NORM_TRAINING_GRAD] = {k_batch_norm_training_grad, M_FLOAT, NULL},
    [TFL_OP_BATCH_NORM_PARAM_GRAD] = {k_batch_norm_param_grad, M_FLOAT, NULL},
};
