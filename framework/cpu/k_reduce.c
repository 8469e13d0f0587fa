/*
 * framework/cpu/k_reduce.c: CPU kernels of the reductions (sum, mean, max, min over axes;
 * argmax, argmin along one axis) and of softmax / log_softmax along one axis, attention's
 * scaled and causal softmax (AttentionSoftmax) and the softmaxes' gradient (SoftmaxGrad).
 * Axis reductions iterate over the input with the output broadcast back to it (stride 0
 * on reduced axes), so one inner loop serves every axis set: it accumulates into a local
 * (wider) accumulator when the output does not move, and elementwise otherwise.
 * float32 sums accumulate in double within a row.
 */
#include "ops/op.h"
#include "ops/ew_math.h"
#include "cpu.h"
#include "kernels.h"

#include <complex.h>
#include <float.h>
#include <omp.h>

typedef float complex c64;
typedef double complex c128;

#define SUM_LOOP(name, T, ACC, ADD)                                                         \
    static void name(int64_t n, char **p, const int64_t *s, const void *aux)                \
    {                                                                                       \
        (void)aux;                                                                          \
        if (s[0] == 0) {                                                                    \
            ACC acc = 0;                                                                    \
            if (s[1] == sizeof(T)) {                                                        \
                const T *a = (const T *)p[1];                                               \
                for (int64_t i = 0; i < n; i++) acc = ADD(acc, (ACC)a[i]);                  \
            } else {                                                                        \
                for (int64_t i = 0; i < n; i++) acc = ADD(acc, (ACC) * (const T *)(p[1] + i * s[1])); \
            }                                                                               \
            *(T *)p[0] = (T)ADD((ACC) * (T *)p[0], acc);                                    \
        } else if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                \
            T *restrict o = (T *)p[0];                                                      \
            const T *a = (const T *)p[1];                                                   \
            for (int64_t i = 0; i < n; i++) o[i] = (T)ADD((ACC)o[i], (ACC)a[i]);            \
        } else {                                                                            \
            for (int64_t i = 0; i < n; i++) {                                               \
                T *o = (T *)(p[0] + i * s[0]);                                              \
                *o = (T)ADD((ACC)*o, (ACC) * (const T *)(p[1] + i * s[1]));                 \
            }                                                                               \
        }                                                                                   \
    }

#define PLUS(a, b) ((a) + (b))
SUM_LOOP(sum_i32, int32_t, uint32_t, PLUS)
SUM_LOOP(sum_i64, int64_t, uint64_t, PLUS)
SUM_LOOP(sum_f32, float, double, PLUS)
SUM_LOOP(sum_f64, double, double, PLUS)
SUM_LOOP(sum_c64, c64, c128, PLUS)
SUM_LOOP(sum_c128, c128, c128, PLUS)

/* max / min: the output starts at the identity (-inf / +inf, or the integer limits) */
#define MAXV(a, b) (((b) > (a) || (b) != (b)) ? (b) : (a))
#define MINV(a, b) (((b) < (a) || (b) != (b)) ? (b) : (a))
#define EXT_LOOP(name, T, OP)                                                               \
    static void name(int64_t n, char **p, const int64_t *s, const void *aux)                \
    {                                                                                       \
        (void)aux;                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                   \
            T *o = (T *)(p[0] + i * s[0]);                                                  \
            *o = OP(*o, *(const T *)(p[1] + i * s[1]));                                     \
        }                                                                                   \
    }
EXT_LOOP(max_i32, int32_t, MAXV)
EXT_LOOP(max_i64, int64_t, MAXV)
EXT_LOOP(max_f32, float, MAXV)
EXT_LOOP(max_f64, double, MAXV)
EXT_LOOP(min_i32, int32_t, MINV)
EXT_LOOP(min_i64, int64_t, MINV)
EXT_LOOP(min_f32, float, MINV)
EXT_LOOP(min_f64, double, MINV)

#define D(dt) [TFL_DTYPE_##dt]
static const tfl__loop_fn sum_loops[TFL_DTYPE_COUNT] = {
    D(INT32) = sum_i32, D(INT64) = sum_i64, D(FLOAT32) = sum_f32, D(FLOAT64) = sum_f64,
    D(COMPLEX64) = sum_c64, D(COMPLEX128) = sum_c128};
static const tfl__loop_fn max_loops[TFL_DTYPE_COUNT] = {
    D(INT32) = max_i32, D(INT64) = max_i64, D(FLOAT32) = max_f32, D(FLOAT64) = max_f64};
static const tfl__loop_fn min_loops[TFL_DTYPE_COUNT] = {
    D(INT32) = min_i32, D(INT64) = min_i64, D(FLOAT32) = min_f32, D(FLOAT64) = min_f64};

/* Fills the output with the reduction's identity. */
static void init_out(tfl_tensor *out, tfl__op_id op)
{
    void *o = tfl__data(out);
    int64_t n = out->numel;
    bool is_max = op == TFL_OP_MAX;
    if (op == TFL_OP_SUM || op == TFL_OP_MEAN) {
        memset(o, 0, (size_t)n * tfl_dtype_size((tfl_dtype)out->dtype));
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        switch ((tfl_dtype)out->dtype) {
        case TFL_DTYPE_INT32: ((int32_t *)o)[i] = is_max ? INT32_MIN : INT32_MAX; break;
        case TFL_DTYPE_INT64: ((int64_t *)o)[i] = is_max ? INT64_MIN : INT64_MAX; break;
        case TFL_DTYPE_FLOAT32: ((float *)o)[i] = is_max ? -INFINITY : INFINITY; break;
        default: ((double *)o)[i] = is_max ? -INFINITY : INFINITY; break;
        }
    }
}

/* mean = sum / count; integers truncate toward zero (TensorFlow) */
static void scale_mean(tfl_tensor *out, int64_t count)
{
    void *o = tfl__data(out);
    for (int64_t i = 0; i < out->numel; i++) {
        switch ((tfl_dtype)out->dtype) {
        case TFL_DTYPE_INT32: ((int32_t *)o)[i] = count ? (int32_t)(((int32_t *)o)[i] / count) : 0; break;
        case TFL_DTYPE_INT64: ((int64_t *)o)[i] = count ? ((int64_t *)o)[i] / count : 0; break;
        case TFL_DTYPE_FLOAT32: ((float *)o)[i] = (float)(((float *)o)[i] / (double)count); break;
        case TFL_DTYPE_FLOAT64: ((double *)o)[i] /= (double)count; break;
        case TFL_DTYPE_COMPLEX64: ((c64 *)o)[i] /= (float)count; break;
        default: ((c128 *)o)[i] /= (double)count; break;
        }
    }
}

/*
 * Sum or Mean of a float tensor over its leading axes: the (rows, c) view's columns (a bias's
 * gradient). The iterator's way adds each row into the output in its own type, on one thread;
 * here blocks of COL_ROWS rows (fixed by the shape, never by the threads) are summed per column
 * in double, on the context's threads, and the blocks' sums added in order: one pass that
 * vectorizes over the columns, and the same result on any thread count.
 */
#define COL_ROWS 64
#define COL_SUMS(T)                                                                         \
    TFL_WIDE_LOOPS static void col_block_##T(const T *restrict x, int64_t nr, int64_t c,   \
                                             double *restrict acc)                          \
    {                                                                                       \
        for (int64_t j = 0; j < c; j++) acc[j] = 0;                                         \
        for (int64_t r = 0; r < nr; r++)                                                    \
            for (int64_t j = 0; j < c; j++) acc[j] += (double)x[r * c + j];                 \
    }
COL_SUMS(float)
COL_SUMS(double)

/* whether k reduces the leading axes of a contiguous float32/float64 x, at least 2 rows */
static bool leading_sum(const tfl__kcall *k, int64_t *rows, int64_t *c)
{
    const tfl__reduce_attrs *attrs = k->attrs;
    const tfl_tensor *x = k->in[0];
    if ((k->op != TFL_OP_SUM && k->op != TFL_OP_MEAN) || x->rank < 1 || !attrs->reduced[0] ||
        (x->dtype != TFL_DTYPE_FLOAT32 && x->dtype != TFL_DTYPE_FLOAT64) ||
        !tfl_tensor_is_contiguous(x))
        return false;
    int lead = 0;
    while (lead < x->rank && attrs->reduced[lead]) lead++;
    for (int d = lead; d < x->rank; d++)
        if (attrs->reduced[d]) return false;
    *rows = tfl__numel(lead, x->shape);
    *c = tfl__numel(x->rank - lead, x->shape + lead);
    return *rows >= 2 && *c >= 1;
}

static tfl_status sum_leading(const tfl__kcall *k, int64_t rows, int64_t c)
{
    const tfl_tensor *x = k->in[0];
    const bool f32 = x->dtype == TFL_DTYPE_FLOAT32;
    const int64_t nb = (rows + COL_ROWS - 1) / COL_ROWS;
    int64_t len;
    if (tfl__mul_overflow_i64(nb, c, &len))
        return tfl__set_error(k->ctx, TFL_RESOURCE_EXHAUSTED, "%s: too many sums",
                              tfl__op_defs[k->op].name);
    /* the blocks' sums: on the stack when few (a single block of a bias gradient) */
    double few[512];
    tfl_tensor *part = NULL;
    if (len > (int64_t)(sizeof few / sizeof few[0]) &&
        !(part = tfl__tensor_alloc(k->ctx, k->dev, TFL_DTYPE_FLOAT64, 1, &len)))
        return k->ctx->err_code;
    double *p = part ? tfl__data(part) : few;
    const char *xd = tfl__data(x);
    const size_t es = f32 ? sizeof(float) : sizeof(double);
    int threads = x->numel >= TFL_CPU_PARALLEL_MIN ? k->ctx->num_threads : 1;
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (int64_t b = 0; b < nb; b++) {
        const int64_t r0 = b * COL_ROWS, nr = rows - r0 < COL_ROWS ? rows - r0 : COL_ROWS;
        const char *at = xd + (size_t)(r0 * c) * es;
        if (f32) col_block_float((const float *)at, nr, c, p + b * c);
        else col_block_double((const double *)at, nr, c, p + b * c);
    }
    const double count = k->op == TFL_OP_MEAN ? (double)((const tfl__reduce_attrs *)k->attrs)->count : 1.0;
    threads = nb * c >= TFL_CPU_PARALLEL_MIN ? k->ctx->num_threads : 1;
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (int64_t j = 0; j < c; j++) { /* each column's blocks in order */
        double v = p[j];
        for (int64_t b = 1; b < nb; b++) v += p[b * c + j];
        if (count != 1.0) v /= count;
        if (f32) ((float *)tfl__data(k->out))[j] = (float)v;
        else ((double *)tfl__data(k->out))[j] = v;
    }
    tfl_tensor_release(part);
    return TFL_OK;
}

static tfl_status k_reduce(const tfl__kcall *k)
{
    const tfl__reduce_attrs *attrs = k->attrs;
    const tfl_tensor *x = k->in[0];
    const tfl__loop_fn *loops = k->dev->kernels[k->op].data;
    tfl_tensor *out = k->out;
    int64_t rows, c;
    if (leading_sum(k, &rows, &c)) return sum_leading(k, rows, c);
    init_out(out, k->op);
    /* the output seen with the input's rank: reduced axes have size 1 */
    tfl_tensor kept = *out;
    kept.rank = x->rank;
    for (int d = 0; d < x->rank; d++) kept.shape[d] = attrs->reduced[d] ? 1 : x->shape[d];
    tfl__contiguous_strides(kept.rank, kept.shape, kept.strides);
    tfl__iter it;
    const tfl_tensor *ops[2] = {&kept, x};
    tfl__iter_init(&it, x->rank, x->shape, 2, ops);
    tfl__iter_run(&it, loops[x->dtype], NULL, 1, false); /* outputs are shared: one thread */
    if (k->op == TFL_OP_MEAN) scale_mean(out, attrs->count);
    return TFL_OK;
}

/* [outer, n, inner] view of a contiguous tensor around `axis` */
static void split_axis(const tfl_tensor *x, int axis, int64_t *outer, int64_t *n, int64_t *inner)
{
    *outer = tfl__numel(axis, x->shape);
    *n = x->rank ? x->shape[axis] : 1;
    *inner = x->rank ? tfl__numel(x->rank - axis - 1, x->shape + axis + 1) : 1;
}

#define ARG_LOOP(name, T, CMP)                                                              \
    static void name(const T *x, int64_t *out, int64_t outer, int64_t n, int64_t inner)     \
    {                                                                                       \
        for (int64_t o = 0; o < outer; o++)                                                 \
            for (int64_t j = 0; j < inner; j++) {                                           \
                const T *row = x + o * n * inner + j;                                       \
                T best = row[0];                                                            \
                int64_t at = 0;                                                             \
                for (int64_t i = 1; i < n; i++) {                                           \
                    T v = row[i * inner];                                                   \
                    if (v CMP best) { best = v; at = i; }                                   \
                }                                                                           \
                out[o * inner + j] = at;                                                    \
            }                                                                               \
    }
ARG_LOOP(argmax_i32, int32_t, >)
ARG_LOOP(argmax_i64, int64_t, >)
ARG_LOOP(argmax_f32, float, >)
ARG_LOOP(argmax_f64, double, >)
ARG_LOOP(argmin_i32, int32_t, <)
ARG_LOOP(argmin_i64, int64_t, <)
ARG_LOOP(argmin_f32, float, <)
ARG_LOOP(argmin_f64, double, <)

static tfl_status k_arg(const tfl__kcall *k)
{
    tfl_tensor *tmp;
    const tfl_tensor *x = tfl__cpu_contiguous(k->ctx, k->in[0], &tmp);
    if (!x) return k->ctx->err_code;
    int64_t outer, n, inner;
    split_axis(x, ((const tfl__axis_attrs *)k->attrs)->axis, &outer, &n, &inner);
    int64_t *o = tfl__data(k->out);
    const void *d = tfl__data(x);
    bool mx = k->op == TFL_OP_ARGMAX;
    switch ((tfl_dtype)x->dtype) {
    case TFL_DTYPE_INT32: (mx ? argmax_i32 : argmin_i32)(d, o, outer, n, inner); break;
    case TFL_DTYPE_INT64: (mx ? argmax_i64 : argmin_i64)(d, o, outer, n, inner); break;
    case TFL_DTYPE_FLOAT32: (mx ? argmax_f32 : argmin_f32)(d, o, outer, n, inner); break;
    default: (mx ? argmax_f64 : argmin_f64)(d, o, outer, n, inner); break;
    }
    tfl_tensor_release(tmp);
    return TFL_OK;
}

/* softmax / log_softmax of one strided row of n elements, shifted by the row's max */
#define SOFTMAX_ROW(name, T, EXP, LOG)                                                      \
    static void name(const T *x, T *y, int64_t n, int64_t stride, bool log_out)             \
    {                                                                                       \
        T m = x[0];                                                                         \
        for (int64_t i = 1; i < n; i++) m = x[i * stride] > m ? x[i * stride] : m;          \
        double sum = 0;                                                                     \
        if (log_out) {                                                                      \
            for (int64_t i = 0; i < n; i++) sum += EXP(x[i * stride] - m);                  \
            T lse = (T)LOG(sum);                                                            \
            for (int64_t i = 0; i < n; i++) y[i * stride] = x[i * stride] - m - lse;        \
        } else {                                                                            \
            for (int64_t i = 0; i < n; i++) {                                               \
                T e = EXP(x[i * stride] - m);                                               \
                y[i * stride] = e;                                                          \
                sum += e;                                                                   \
            }                                                                               \
            T inv = (T)(1.0 / sum);                                                         \
            for (int64_t i = 0; i < n; i++) y[i * stride] *= inv;                           \
        }                                                                                   \
    }
SOFTMAX_ROW(softmax_row_f32, float, expf, log)
SOFTMAX_ROW(softmax_row_f64, double, exp, log)

/* float32 softmax / log_softmax of one contiguous row (the last axis: attention's scores, a
 * classifier's logits), in passes that vectorize: the max; e^(x - max) by ew_math.h's
 * straight-line exp (GELU's: a few ulp from expf, 0 below e^-87, where expf's own results are
 * subnormal); their sum in double over interleaved partial sums (TFL_LANE_SUM); the scaling.
 * expf per element, with its range checks, took most of a scalar row's time. */
TFL_WIDE_LOOPS static void softmax_row_f32_unit(const float *restrict x, float *restrict y,
                                                int64_t n, bool log_out)
{
    float m;
#define SOFTMAX_X(j) x[j]
    TFL_LANE_MAX(m, float, n, SOFTMAX_X);
#undef SOFTMAX_X
    for (int64_t i = 0; i < n; i++) y[i] = tfl_ew_gelu_exp_f32(x[i] - m);
    double sum;
#define SOFTMAX_E(j) y[j]
    TFL_LANE_SUM(sum, n, SOFTMAX_E);
#undef SOFTMAX_E
    if (log_out) {
        const float lse = (float)log(sum);
        for (int64_t j = 0; j < n; j++) y[j] = x[j] - m - lse;
    } else {
        const float inv = (float)(1.0 / sum);
        for (int64_t j = 0; j < n; j++) y[j] *= inv;
    }
}

static tfl_status k_softmax(const tfl__kcall *k)
{
    tfl_tensor *tmp;
    const tfl_tensor *x = tfl__cpu_contiguous(k->ctx, k->in[0], &tmp);
    if (!x) return k->ctx->err_code;
    int64_t outer, n, inner;
    split_axis(x, ((const tfl__axis_attrs *)k->attrs)->axis, &outer, &n, &inner);
    bool log_out = k->op == TFL_OP_LOG_SOFTMAX, f32 = x->dtype == TFL_DTYPE_FLOAT32;
    const char *xd = tfl__data(x);
    char *yd = tfl__data(k->out);
    size_t es = tfl_dtype_size((tfl_dtype)x->dtype);
    int64_t rows = outer * inner;
    int threads = rows * n >= TFL_CPU_PARALLEL_MIN ? k->ctx->num_threads : 1;
    if (n > 0) {
#pragma omp parallel for num_threads(threads) if (threads > 1)
        for (int64_t r = 0; r < rows; r++) {
            int64_t o = r / inner, j = r % inner;
            size_t off = (size_t)(o * n * inner + j) * es;
            if (f32 && inner == 1)
                softmax_row_f32_unit((const float *)(xd + off), (float *)(yd + off), n, log_out);
            else if (f32)
                softmax_row_f32((const float *)(xd + off), (float *)(yd + off), n, inner, log_out);
            else softmax_row_f64((const double *)(xd + off), (double *)(yd + off), n, inner, log_out);
        }
    }
    tfl_tensor_release(tmp);
    return TFL_OK;
}

/* AttentionSoftmax of one contiguous row of n: the first `kept` entries softmax(scale x) in
 * softmax_row_f32_unit's passes (float32: the same exp, so the same values as softmax of the
 * scaled scores plus a mask of -1e9), the rest 0 without an exp. */
#define ATTENTION_ROW(name, T, EXP)                                                         \
    TFL_WIDE_LOOPS static void name(const T *restrict x, T *restrict y, int64_t n,          \
                                    int64_t kept, T scale)                                  \
    {                                                                                       \
        T m;                                                                                \
        TFL_LANE_MAX(m, T, kept, ROW_XS);                                                   \
        /* the exp and the scaling run on whole vectors of 16 past `kept` where the row has \
         * them (a causal row's scalar tails cost as much as its vectors); what lies past   \
         * kept is zeroed after */                                                          \
        const int64_t wide = kept + 15 < n ? (kept + 15) / 16 * 16 : n;                     \
        for (int64_t j = 0; j < wide; j++) y[j] = EXP(x[j] * scale - m);                    \
        double sum;                                                                         \
        TFL_LANE_SUM(sum, kept, ROW_Y);                                                     \
        const T inv = (T)(1.0 / sum);                                                       \
        for (int64_t j = 0; j < wide; j++) y[j] *= inv;                                     \
        for (int64_t j = kept; j < n; j++) y[j] = 0;                                        \
    }
#define ROW_Y(j) y[j]
#define ROW_XS(j) (x[j] * scale)
ATTENTION_ROW(attention_row_f32, float, tfl_ew_gelu_exp_f32)
ATTENTION_ROW(attention_row_f64, double, exp)
#undef ROW_Y
#undef ROW_XS

/* scores (..., q, n), contiguous: rows of n, row r the query r % q */
static tfl_status k_attention_softmax(const tfl__kcall *k)
{
    const tfl__softmax_attrs *at = k->attrs;
    tfl_tensor *tmp;
    const tfl_tensor *x = tfl__cpu_contiguous(k->ctx, k->in[0], &tmp);
    if (!x) return k->ctx->err_code;
    const int64_t n = x->shape[x->rank - 1], q = x->shape[x->rank - 2];
    const int64_t rows = n > 0 ? x->numel / n : 0;
    const bool f32 = x->dtype == TFL_DTYPE_FLOAT32;
    const void *xd = tfl__data(x);
    void *yd = tfl__data(k->out);
    int threads = x->numel >= TFL_CPU_PARALLEL_MIN ? k->ctx->num_threads : 1;
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t i = r % q, kept = at->causal && i + 1 < n ? i + 1 : n;
        if (f32)
            attention_row_f32((const float *)xd + r * n, (float *)yd + r * n, n, kept,
                              (float)at->scale);
        else
            attention_row_f64((const double *)xd + r * n, (double *)yd + r * n, n, kept,
                              at->scale);
    }
    tfl_tensor_release(tmp);
    return TFL_OK;
}

/* SoftmaxGrad of one row: dx = scale y (dy - sum(dy y)), the sum in double (interleaved
 * partial sums when contiguous) */
#define SOFTMAX_GRAD_ROW(name, T)                                                           \
    TFL_WIDE_LOOPS static void name##_unit(const T *restrict y, const T *restrict dy,       \
                                           T *restrict dx, int64_t n, T scale)              \
    {                                                                                       \
        double sum;                                                                         \
        TFL_LANE_SUM(sum, n, ROW_DY_Y);                                                     \
        const T r = (T)sum;                                                                 \
        for (int64_t j = 0; j < n; j++) dx[j] = scale * y[j] * (dy[j] - r);                 \
    }                                                                                       \
    static void name(const T *y, const T *dy, T *dx, int64_t n, int64_t stride, T scale)    \
    {                                                                                       \
        double sum = 0;                                                                     \
        for (int64_t j = 0; j < n; j++) sum += (double)y[j * stride] * dy[j * stride];      \
        const T r = (T)sum;                                                                 \
        for (int64_t j = 0; j < n; j++)                                                     \
            dx[j * stride] = scale * y[j * stride] * (dy[j * stride] - r);                  \
    }
#define ROW_DY_Y(j) ((double)y[j] * dy[j])
SOFTMAX_GRAD_ROW(softmax_grad_row_f32, float)
SOFTMAX_GRAD_ROW(softmax_grad_row_f64, double)
#undef ROW_DY_Y

static tfl_status k_softmax_grad(const tfl__kcall *k)
{
    const tfl__softmax_attrs *at = k->attrs;
    tfl_tensor *ty = NULL, *td = NULL;
    const tfl_tensor *y = tfl__cpu_contiguous(k->ctx, k->in[0], &ty);
    const tfl_tensor *dy = y ? tfl__cpu_contiguous(k->ctx, k->in[1], &td) : NULL;
    if (!dy) {
        tfl_tensor_release(ty);
        return k->ctx->err_code;
    }
    int64_t outer, n, inner;
    split_axis(y, at->axis, &outer, &n, &inner);
    const bool f32 = y->dtype == TFL_DTYPE_FLOAT32;
    const size_t es = tfl_dtype_size((tfl_dtype)y->dtype);
    const char *yd = tfl__data(y), *dd = tfl__data(dy);
    char *xd = tfl__data(k->out);
    const int64_t rows = outer * inner;
    int threads = rows * n >= TFL_CPU_PARALLEL_MIN ? k->ctx->num_threads : 1;
    if (n > 0) {
#pragma omp parallel for num_threads(threads) if (threads > 1)
        for (int64_t r = 0; r < rows; r++) {
            const size_t off = (size_t)((r / inner) * n * inner + r % inner) * es;
            const void *yr = yd + off, *dr = dd + off;
            void *xr = xd + off;
            if (f32 && inner == 1)
                softmax_grad_row_f32_unit(yr, dr, xr, n, (float)at->scale);
            else if (f32)
                softmax_grad_row_f32(yr, dr, xr, n, inner, (float)at->scale);
            else if (inner == 1)
                softmax_grad_row_f64_unit(yr, dr, xr, n, at->scale);
            else
                softmax_grad_row_f64(yr, dr, xr, n, inner, at->scale);
        }
    }
    tfl_tensor_release(ty);
    tfl_tensor_release(td);
    return TFL_OK;
}

#define M_REAL (TFL_MASK_INT | TFL_DT(FLOAT32) | TFL_DT(FLOAT64))
#define M_NUM (M_REAL | TFL_MASK_COMPLEX)
#define M_FLOAT (TFL_DT(FLOAT32) | TFL_DT(FLOAT64))

const tfl__kernel tfl__cpu_reduce_kernels[TFL_OP_COUNT] = {
    [TFL_OP_SUM] = {k_reduce, M_NUM, sum_loops},
    [TFL_OP_MEAN] = {k_reduce, M_NUM, sum_loops},
    [TFL_OP_MAX] = {k_reduce, M_REAL, max_loops},
    [TFL_OP_MIN] = {k_reduce, M_REAL, min_loops},
    [TFL_OP_ARGMAX] = {k_arg, M_REAL, NULL},
    [TFL_OP_ARGMIN] = {k_arg, M_REAL, NULL},
    [TFL_OP_SOFTMAX] = {k_softmax, M_FLOAT, NULL},
    [TFL_OP_LOG_SOFTMAX] = {k_softmax, M_FLOAT, NULL},
    [TFL_OP_ATTENTION_SOFTMAX] = {k_attention_softmax, M_FLOAT, NULL},
    [TFL_OP_SOFTMAX_GRAD] = {k_softmax_grad, M_FLOAT, NULL},
};
