/*
 * framework/cpu/k_loss.c: CPU kernels of the fused softmax cross-entropy losses, with dense
 * (probability) labels along any axis and with sparse (class index) labels on the last axis.
 *
 * Each row is read twice and nothing is materialised: a pass for the max m, a pass for
 * s = sum(e^(x - m)) (accumulated in double), and then the loss, since
 * -log_softmax(x)_i = (m - x_i) + log s:
 *     dense:  sum_i z_i ((m - x_i) + log s)       (the second pass also sums z_i (m - x_i))
 *     sparse: (m - x_label) + log s
 * Subtracting the max first keeps e^(x - m) <= 1, so logits of 1000 do not overflow, and
 * forming (m - x_i) before adding log s keeps large logits' small differences exact.
 * float16/bfloat16 come here as float32 (TFL_OPF_HALF_VIA_F32).
 * The sparse loss's gradient dx = dy (softmax(x) - one_hot(label)) is one op as well
 * (SparseSoftmaxCrossEntropyWithLogitsGrad): one row's softmax written straight into dx.
 */
#include "ops/op.h"
#include "ops/ew_math.h"
#include "cpu.h"
#include "kernels.h"

#include <omp.h>
#include <stdio.h>

/* dense: one strided row of n logits x and labels z */
#define XENT_ROW(name, T, EXP)                                                              \
    static T name(const T *x, const T *z, int64_t n, int64_t stride)                        \
    {                                                                                       \
        if (n == 0) return 0;                                                               \
        T m = x[0];                                                                         \
        for (int64_t i = 1; i < n; i++) m = x[i * stride] > m ? x[i * stride] : m;          \
        double s = 0, zd = 0, zsum = 0;                                                     \
        for (int64_t i = 0; i < n; i++) {                                                   \
            T d = m - x[i * stride];                                                        \
            s += EXP(-d);                                                                   \
            zd += (double)z[i * stride] * (double)d;                                        \
            zsum += (double)z[i * stride];                                                  \
        }                                                                                   \
        return (T)(zd + zsum * log(s));                                                     \
    }
XENT_ROW(xent_row_f32, float, expf)
XENT_ROW(xent_row_f64, double, exp)

/* sparse: one contiguous row of n logits and the label's index. The max and the sum run in
 * lanes side by side, and float32's exp is ew_math.h's straight-line one, as in the gradient
 * below (the same e^(x - m) there and here), so the row vectorizes: a language model's
 * 2048 x 256 logits took 1.4 ms on two threads with expf and one running sum, most of the
 * loss's time */
#define ROW_X(i) x[i]
#define SPARSE_ROW(name, T, ROW_EXP)                                                        \
    TFL_WIDE_LOOPS static T name(const T *restrict x, int64_t n, int64_t label)            \
    {                                                                                       \
        T m;                                                                                \
        TFL_LANE_MAX(m, T, n, ROW_X);                                                       \
        double s;                                                                           \
        TFL_LANE_SUM(s, n, ROW_EXP);                                                        \
        return (T)((double)(m - x[label]) + log(s));                                        \
    }
#define ROW_EXP_F32(i) tfl_ew_gelu_exp_f32(x[i] - m)
#define ROW_EXP_F64(i) exp(x[i] - m)
SPARSE_ROW(sparse_row_f32, float, ROW_EXP_F32)
SPARSE_ROW(sparse_row_f64, double, ROW_EXP_F64)
#undef ROW_EXP_F32
#undef ROW_EXP_F64

static int threads_for(const tfl__kcall *k, int64_t elements)
{
    return elements >= TFL_CPU_PARALLEL_MIN ? k->ctx->num_threads : 1;
}

static tfl_status k_softmax_xent(const tfl__kcall *k)
{
    tfl_ctx *ctx = k->ctx;
    tfl_tensor *tx = NULL, *tz = NULL;
    const tfl_tensor *x = tfl__cpu_contiguous(ctx, k->in[0], &tx);
    const tfl_tensor *z = x ? tfl__cpu_contiguous(ctx, k->in[1], &tz) : NULL;
    if (!z) {
        tfl_tensor_release(tx);
        return ctx->err_code;
    }
    int axis = ((const tfl__axis_attrs *)k->attrs)->axis;
    int64_t outer = tfl__numel(axis, x->shape), n = x->shape[axis];
    int64_t inner = tfl__numel(x->rank - axis - 1, x->shape + axis + 1);
    int64_t rows = outer * inner;
    bool f32 = x->dtype == TFL_DTYPE_FLOAT32;
    const char *xd = tfl__data(x), *zd = tfl__data(z);
    char *od = tfl__data(k->out);
    size_t es = tfl_dtype_size((tfl_dtype)x->dtype);
    int threads = threads_for(k, rows * n);
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (int64_t r = 0; r < rows; r++) {
        size_t off = (size_t)((r / inner) * n * inner + r % inner) * es;
        if (f32)
            ((float *)od)[r] = xent_row_f32((const float *)(xd + off), (const float *)(zd + off),
                                            n, inner);
        else
            ((double *)od)[r] = xent_row_f64((const double *)(xd + off),
                                             (const double *)(zd + off), n, inner);
    }
    tfl_tensor_release(tx);
    tfl_tensor_release(tz);
    return TFL_OK;
}

static int64_t load_label(const void *p, int64_t i, tfl_dtype dt)
{
    return dt == TFL_DTYPE_INT32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

/* INVALID_ARGUMENT for labels[index] = v, as TensorFlow words it, with the position */
static tfl_status k_sparse_softmax_xent(const tfl__kcall *k)
{
    tfl_ctx *ctx = k->ctx;
    tfl_tensor *tx = NULL, *tl = NULL;
    tfl_status st = TFL_OK;
    const tfl_tensor *x = tfl__cpu_contiguous(ctx, k->in[0], &tx);
    const tfl_tensor *labels = x ? tfl__cpu_contiguous(ctx, k->in[1], &tl) : NULL;
    if (!labels) {
        st = ctx->err_code;
        goto done;
    }
    int64_t classes = x->shape[x->rank - 1], rows = labels->numel;
    const void *ld = tfl__data(labels);
    tfl_dtype lt = (tfl_dtype)labels->dtype;
    for (int64_t r = 0; r < rows; r++) {
        int64_t v = load_label(ld, r, lt);
        if (v < 0 || v >= classes) {
            st = tfl__sparse_label_error(ctx, labels, r, v, classes);
            goto done;
        }
    }
    bool f32 = x->dtype == TFL_DTYPE_FLOAT32;
    const void *xd = tfl__data(x);
    void *od = tfl__data(k->out);
    int threads = threads_for(k, rows * classes);
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (int64_t r = 0; r < rows; r++) {
        int64_t label = load_label(ld, r, lt);
        if (f32)
            ((float *)od)[r] = sparse_row_f32((const float *)xd + r * classes, classes, label);
        else
            ((double *)od)[r] = sparse_row_f64((const double *)xd + r * classes, classes, label);
    }
done:
    tfl_tensor_release(tx);
    tfl_tensor_release(tl);
    return st;
}

/* dx = dy (softmax(x) - one_hot(label)) of one contiguous row: softmax's passes (the max,
 * e^(x - max) into dx, their sum in double over interleaved partial sums), then the scaling;
 * float32's exp is ew_math.h's straight-line one (as softmax's), so the loop vectorizes */
#define SPARSE_GRAD_ROW(name, T, EXP)                                                       \
    TFL_WIDE_LOOPS static void name(const T *restrict x, T *restrict dx, int64_t n,         \
                                    int64_t label, T dy)                                    \
    {                                                                                       \
        T m;                                                                                \
        TFL_LANE_MAX(m, T, n, ROW_X);                                                       \
        for (int64_t i = 0; i < n; i++) dx[i] = EXP(x[i] - m);                              \
        double s;                                                                           \
        TFL_LANE_SUM(s, n, ROW_DX);                                                         \
        const T f = (T)((double)dy / s);                                                    \
        for (int64_t i = 0; i < n; i++) dx[i] *= f;                                         \
        dx[label] -= dy;                                                                    \
    }
#define ROW_DX(i) dx[i]
SPARSE_GRAD_ROW(sparse_grad_row_f32, float, tfl_ew_gelu_exp_f32)
SPARSE_GRAD_ROW(sparse_grad_row_f64, double, exp)
#undef ROW_DX

/* SparseSoftmaxCrossEntropyWithLogitsGrad (x, labels, dy) -> dx, x's shape */
static tfl_status k_sparse_softmax_xent_grad(const tfl__kcall *k)
{
    tfl_ctx *ctx = k->ctx;
    tfl_tensor *tmp[3] = {NULL};
    const tfl_tensor *in[3] = {NULL};
    tfl_status st = TFL_OK;
    for (int i = 0; i < 3 && st == TFL_OK; i++)
        if (!(in[i] = tfl__cpu_contiguous(ctx, k->in[i], &tmp[i]))) st = ctx->err_code;
    const tfl_tensor *x = in[0], *labels = in[1];
    const int64_t classes = st == TFL_OK ? x->shape[x->rank - 1] : 0;
    const int64_t rows = st == TFL_OK ? labels->numel : 0;
    const void *ld = st == TFL_OK ? tfl__data(labels) : NULL;
    const tfl_dtype lt = st == TFL_OK ? (tfl_dtype)labels->dtype : TFL_DTYPE_INT64;
    for (int64_t r = 0; r < rows && st == TFL_OK; r++) {
        int64_t v = load_label(ld, r, lt);
        if (v < 0 || v >= classes) st = tfl__sparse_label_error(ctx, labels, r, v, classes);
    }
    if (st == TFL_OK && classes > 0) {
        const bool f32 = x->dtype == TFL_DTYPE_FLOAT32;
        const void *xd = tfl__data(x), *dd = tfl__data(in[2]);
        void *od = tfl__data(k->out);
        int threads = threads_for(k, rows * classes);
#pragma omp parallel for num_threads(threads) if (threads > 1)
        for (int64_t r = 0; r < rows; r++) {
            const int64_t label = load_label(ld, r, lt);
            if (f32)
                sparse_grad_row_f32((const float *)xd + r * classes, (float *)od + r * classes,
                                    classes, label, ((const float *)dd)[r]);
            else
                sparse_grad_row_f64((const double *)xd + r * classes, (double *)od + r * classes,
                                    classes, label, ((const double *)dd)[r]);
        }
    }
    for (int i = 0; i < 3; i++) tfl_tensor_release(tmp[i]);
    return st;
}

#define M_FLOAT (TFL_DT(FLOAT32) | TFL_DT(FLOAT64))

const tfl__kernel tfl__cpu_loss_kernels[TFL_OP_COUNT] = {
    [TFL_OP_SOFTMAX_XENT] = {k_softmax_xent, M_FLOAT, NULL},
    [TFL_OP_SPARSE_SOFTMAX_XENT] = {k_sparse_softmax_xent, M_FLOAT, NULL},
    [TFL_OP_SPARSE_SOFTMAX_XENT_GRAD] = {k_sparse_softmax_xent_grad, M_FLOAT, NULL},
};
