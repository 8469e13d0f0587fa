/*
 * framework/cpu/k_norm.c: CPU kernels of BatchNorm and Dropout (ops/norm.c has the checks,
 * tapeflow/ops.h the formulas). float16/bfloat16 come here as float32.
 *
 * BatchNorm: x (..., C) is read as (rows, C) and the parameters as (C). Per channel
 *     a[c] = scale[c] / sqrt(variance[c] + epsilon)        (in double, rounded once)
 * then one pass y = (x - mean[c]) * a[c] + offset[c]: OpenMP over rows for big tensors, the
 * loop over channels plain and vectorizable. Subtracting the mean before scaling keeps x
 * close to a large mean exact (TensorFlow's x * a + (offset - mean * a) cancels there).
 *
 * Dropout: element i's uniform is the top 24 bits of word i%4 of the Philox block of i/4,
 * ctr = (lo(i/4), hi(i/4), 0, "DROP"), for every dtype: each block is independent, so the
 * mask never depends on threads or chunking, and float32 and float64 drop the same elements.
 */
#include "../ops/op.h"
#include "../random_internal.h"
#include "cpu.h"
#include "kernels.h"

#define DROP_WORD 0x44524F50u              /* "DROP": ctr[3] of dropout's blocks */
#define TWO_M24 (1.0 / 16777216.0)         /* 2^-24 */

static int threads_for(const tfl__kcall *k, int64_t elements)
{
    return elements >= TFL_CPU_PARALLEL_MIN ? k->ctx->num_threads : 1;
}

/* ---- BatchNorm ------------------------------------------------------------------------------ */

/* y, x: (rows, c); m, a, o: (c) */
static void bn_rows_f32(const float *x, const float *m, const float *a, const float *o, float *y,
                        int64_t rows, int64_t c, int threads)
{
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * c;
        float *yr = y + r * c;
        for (int64_t j = 0; j < c; j++) yr[j] = (xr[j] - m[j]) * a[j] + o[j];
    }
}

static void bn_rows_f64(const double *x, const double *m, const double *a, const double *o,
                        double *y, int64_t rows, int64_t c, int threads)
{
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * c;
        double *yr = y + r * c;
        for (int64_t j = 0; j < c; j++) yr[j] = (xr[j] - m[j]) * a[j] + o[j];
    }
}

static tfl_status k_batch_norm(const tfl__kcall *k)
{
    tfl_ctx *ctx = k->ctx;
    tfl_tensor *tmp[5] = {NULL};
    const tfl_tensor *in[5];
    tfl_tensor *a = NULL;
    tfl_status st = TFL_OK;
    for (int i = 0; i < 5; i++) {
        in[i] = tfl__cpu_contiguous(ctx, k->in[i], &tmp[i]);
        if (!in[i]) {
            st = ctx->err_code;
            goto done;
        }
    }
    const tfl_tensor *x = in[0];
    const tfl_dtype dt = (tfl_dtype)x->dtype;
    const int64_t c = x->shape[x->rank - 1], rows = c ? x->numel / c : 0;
    const double eps = ((const tfl__batch_norm_attrs *)k->attrs)->epsilon;
    a = tfl__tensor_alloc(ctx, k->dev, dt, 1, &c);
    if (!a) {
        st = ctx->err_code;
        goto done;
    }
    const int threads = threads_for(k, x->numel);
    if (dt == TFL_DTYPE_FLOAT32) {
        const float *v = tfl__data(in[2]), *s = tfl__data(in[4]);
        float *ad = tfl__data(a);
        for (int64_t j = 0; j < c; j++) ad[j] = (float)((double)s[j] / sqrt((double)v[j] + eps));
        bn_rows_f32(tfl__data(x), tfl__data(in[1]), ad, tfl__data(in[3]), tfl__data(k->out),
                    rows, c, threads);
    } else {
        const double *v = tfl__data(in[2]), *s = tfl__data(in[4]);
        double *ad = tfl__data(a);
        for (int64_t j = 0; j < c; j++) ad[j] = s[j] / sqrt(v[j] + eps);
        bn_rows_f64(tfl__data(x), tfl__data(in[1]), ad, tfl__data(in[3]), tfl__data(k->out),
                    rows, c, threads);
    }
done:
    tfl_tensor_release(a);
    for (int i = 0; i < 5; i++) tfl_tensor_release(tmp[i]);
    return st;
}

/* ---- Dropout -------------------------------------------------------------------------------- */

static inline void drop_block(uint64_t b, const uint32_t key[2], uint32_t r[4])
{
    const uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32), 0, DROP_WORD};
    tfl__philox4x32_10(ctr, key, r);
}

/* Element 4b + l is kept when u24(R[l]) >= rate, R = block b (compared in double). */
static inline bool kept(uint32_t word, double rate)
{
    return (double)(word >> 8) * TWO_M24 >= rate;
}

/* y = x / keep where kept, else 0; x, y: n contiguous elements. One block per 4 elements. */
static void dropout_f32(const float *x, float *y, int64_t n, const uint32_t key[2], double rate,
                        int threads)
{
    const double keep = 1.0 - rate;
    const int64_t blocks = (n + 3) / 4;
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (int64_t b = 0; b < blocks; b++) {
        uint32_t r[4];
        drop_block((uint64_t)b, key, r);
        const int64_t i0 = 4 * b, lanes = n - i0 < 4 ? n - i0 : 4;
        for (int64_t l = 0; l < lanes; l++)
            y[i0 + l] = kept(r[l], rate) ? (float)((double)x[i0 + l] / keep) : 0.0f;
    }
}

static void dropout_f64(const double *x, double *y, int64_t n, const uint32_t key[2],
                        double rate, int threads)
{
    const double keep = 1.0 - rate;
    const int64_t blocks = (n + 3) / 4;
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (int64_t b = 0; b < blocks; b++) {
        uint32_t r[4];
        drop_block((uint64_t)b, key, r);
        const int64_t i0 = 4 * b, lanes = n - i0 < 4 ? n - i0 : 4;
        for (int64_t l = 0; l < lanes; l++)
            y[i0 + l] = kept(r[l], rate) ? x[i0 + l] / keep : 0.0;
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
    if (x->dtype == TFL_DTYPE_FLOAT32)
        dropout_f32(tfl__data(x), tfl__data(k->out), x->numel, key, at->rate, threads);
    else
        dropout_f64(tfl__data(x), tfl__data(k->out), x->numel, key, at->rate, threads);
    tfl_tensor_release(tx);
    return TFL_OK;
}

#define M_FLOAT (TFL_DT(FLOAT32) | TFL_DT(FLOAT64))

const tfl__kernel tfl__cpu_norm_kernels[TFL_OP_COUNT] = {
    [TFL_OP_BATCH_NORM] = {k_batch_norm, M_FLOAT, NULL},
    [TFL_OP_DROPOUT] = {k_dropout, M_FLOAT, NULL},
};
