/*
 * framework/ops/elementwise.c: entry points of the elementwise ops (arithmetic,
 * comparisons, logic, unary math and activations), generated from op_list.h's TFL_EW_LIST
 * but for the few written by hand, and of the softmaxes (softmax, log_softmax, attention's
 * scaled and masked one, and SoftmaxGrad, the gradient op of the first and the last). Each
 * validates its inputs, infers the broadcast shape and the output dtype, and hands over to
 * tfl__op_run.
 */
#include "op.h"

#include <float.h>
#include <math.h>

/* the output dtype of an `out` column (op_list.h) */
enum { OUT_SAME, OUT_BOOL, OUT_REAL };

static tfl_dtype out_dtype(int out, tfl_dtype in)
{
    if (out == OUT_BOOL) return TFL_DTYPE_BOOL;
    if (out == OUT_REAL && in == TFL_DTYPE_COMPLEX64) return TFL_DTYPE_FLOAT32;
    if (out == OUT_REAL && in == TFL_DTYPE_COMPLEX128) return TFL_DTYPE_FLOAT64;
    return in;
}

/* Binary elementwise op: same dtype, NumPy broadcasting. */
static tfl_tensor *binary(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *a, const tfl_tensor *b,
                          int out, const tfl__scalar_attrs *attrs)
{
    if (!ctx) return NULL;
    const tfl_tensor *in[2] = {a, b};
    if (!tfl__check_inputs(ctx, op, 2, in) || !tfl__autocast(ctx, op, 2, in)) return NULL;
    a = in[0];
    b = in[1];
    if (!tfl__check_same_dtype(ctx, op, a, b) || !tfl__check_dtype(ctx, op, (tfl_dtype)a->dtype))
        return NULL;
    int rank;
    int64_t shape[TFL_MAX_RANK];
    if (TFL_UNLIKELY(!tfl__broadcast_shapes(a->rank, a->shape, b->rank, b->shape, &rank, shape))) {
        char sa[128], sb[128];
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "%s: incompatible shapes: %s vs %s",
                       tfl__op_defs[op].name, tfl__shape_str(a->rank, a->shape, sa, sizeof sa),
                       tfl__shape_str(b->rank, b->shape, sb, sizeof sb));
        return NULL;
    }
    return tfl__op_run(ctx, op, (tfl_dtype)a->dtype, 2, in, out_dtype(out, (tfl_dtype)a->dtype),
                       rank, shape, attrs);
}

static tfl_tensor *unary(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *x, int out,
                         const tfl__scalar_attrs *attrs)
{
    if (!ctx) return NULL;
    if (!tfl__check_inputs(ctx, op, 1, &x) || !tfl__check_dtype(ctx, op, (tfl_dtype)x->dtype))
        return NULL;
    return tfl__op_run(ctx, op, (tfl_dtype)x->dtype, 1, &x, out_dtype(out, (tfl_dtype)x->dtype),
                       x->rank, x->shape, attrs);
}

tfl_tensor *tfl__elementwise_grad(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *dy,
                                  const tfl_tensor *x, const tfl__scalar_attrs *attrs)
{
    return binary(ctx, op, dy, x, OUT_SAME, attrs);
}

/* the entry points of the lines with api API, one signature per kind */
#define API_U(id, fn, out)                                                                         \
    tfl_tensor *tfl_##fn(tfl_ctx *ctx, const tfl_tensor *x)                                        \
    {                                                                                              \
        return unary(ctx, TFL_OP_##id, x, OUT_##out, NULL);                                        \
    }
#define API_UA(id, fn, out)                                                                        \
    tfl_tensor *tfl_##fn(tfl_ctx *ctx, const tfl_tensor *x, double a)                              \
    {                                                                                              \
        tfl__scalar_attrs attrs = {a};                                                             \
        return unary(ctx, TFL_OP_##id, x, OUT_##out, &attrs);                                      \
    }
#define API_B(id, fn, out)                                                                         \
    tfl_tensor *tfl_##fn(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b)                   \
    {                                                                                              \
        return binary(ctx, TFL_OP_##id, a, b, OUT_##out, NULL);                                    \
    }
#define API_D API_U
#define API_DA API_UA
#define ENTRY_API(id, fn, kind, out) API_##kind(id, fn, out)
#define ENTRY_OWN(id, fn, kind, out)
#define ENTRY_(ctx, id, nm, fn, kind, out, cpu, gpu, api, saves) ENTRY_##api(id, fn, kind, out)
TFL_EW_LIST(ENTRY_, ~)

/* by hand: Identity (a copy), Conj (Identity for real dtypes), Gelu (a bool flag);
 * SigmoidCrossEntropyWithLogits is in loss.c */
tfl_tensor *tfl_identity(tfl_ctx *ctx, const tfl_tensor *x)
{
    return unary(ctx, TFL_OP_IDENTITY, x, OUT_SAME, NULL);
}

tfl_tensor *tfl_conj(tfl_ctx *ctx, const tfl_tensor *x)
{
    if (ctx && x && !tfl_dtype_is_complex((tfl_dtype)x->dtype)) return tfl_identity(ctx, x);
    return unary(ctx, TFL_OP_CONJ, x, OUT_SAME, NULL);
}

tfl_tensor *tfl_gelu(tfl_ctx *ctx, const tfl_tensor *x, bool approximate)
{
    tfl__scalar_attrs attrs = {approximate ? 1.0 : 0.0};
    return unary(ctx, TFL_OP_GELU, x, OUT_SAME, &attrs);
}

/* softmax and log_softmax along one axis */
static tfl_tensor *softmax_like(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *x, int axis)
{
    if (!ctx) return NULL;
    if (!tfl__check_inputs(ctx, op, 1, &x) || !tfl__autocast(ctx, op, 1, &x) ||
        !tfl__check_dtype(ctx, op, (tfl_dtype)x->dtype))
        return NULL;
    int rank = x->rank > 0 ? x->rank : 1;
    int a = tfl__norm_axis(axis, rank);
    TFL_CHECK_RET(ctx, a >= 0, NULL, TFL_INVALID_ARGUMENT, "%s: axis %d is out of range for rank %d",
                  tfl__op_defs[op].name, axis, x->rank);
    tfl__axis_attrs attrs = {x->rank > 0 ? a : 0};
    return tfl__op_run(ctx, op, (tfl_dtype)x->dtype, 1, &x, (tfl_dtype)x->dtype, x->rank, x->shape,
                       &attrs);
}

tfl_tensor *tfl_softmax(tfl_ctx *ctx, const tfl_tensor *x, int axis)
{
    return softmax_like(ctx, TFL_OP_SOFTMAX, x, axis);
}

tfl_tensor *tfl_log_softmax(tfl_ctx *ctx, const tfl_tensor *x, int axis)
{
    return softmax_like(ctx, TFL_OP_LOG_SOFTMAX, x, axis);
}

tfl_tensor *tfl_attention_softmax(tfl_ctx *ctx, const tfl_tensor *scores, double scale,
                                  bool causal)
{
    const tfl__op_id op = TFL_OP_ATTENTION_SOFTMAX;
    if (!ctx) return NULL;
    if (!tfl__check_inputs(ctx, op, 1, &scores) || !tfl__autocast(ctx, op, 1, &scores) ||
        !tfl__check_dtype(ctx, op, (tfl_dtype)scores->dtype))
        return NULL;
    TFL_CHECK_RET(ctx, scores->rank >= 2, NULL, TFL_INVALID_ARGUMENT,
                  "%s: scores must have rank 2 or more (..., queries, keys), got rank %d",
                  tfl__op_defs[op].name, scores->rank);
    TFL_CHECK_RET(ctx, isfinite(scale), NULL, TFL_INVALID_ARGUMENT,
                  "%s: scale must be finite, got %g", tfl__op_defs[op].name, scale);
    TFL_CHECK_RET(ctx, scores->dtype == TFL_DTYPE_FLOAT64 || fabs(scale) <= FLT_MAX, NULL,
                  TFL_INVALID_ARGUMENT, "%s: scale %g is past float32's range (scores are %s)",
                  tfl__op_defs[op].name, scale, tfl_dtype_name((tfl_dtype)scores->dtype));
    const tfl__softmax_attrs attrs = {scores->rank - 1, causal, scale};
    return tfl__op_run(ctx, op, (tfl_dtype)scores->dtype, 1, &scores, (tfl_dtype)scores->dtype,
                       scores->rank, scores->shape, &attrs);
}

tfl_tensor *tfl__softmax_grad(tfl_ctx *ctx, const tfl_tensor *y, const tfl_tensor *dy, int axis,
                              double scale)
{
    const tfl__op_id op = TFL_OP_SOFTMAX_GRAD;
    if (!ctx) return NULL;
    const tfl_tensor *in[2] = {y, dy};
    if (!tfl__check_inputs(ctx, op, 2, in) || !tfl__autocast(ctx, op, 2, in)) return NULL;
    y = in[0];
    dy = in[1];
    if (!tfl__check_dtype(ctx, op, (tfl_dtype)y->dtype) || !tfl__check_same_dtype(ctx, op, y, dy))
        return NULL;
    char sy[128], sd[128];
    TFL_CHECK_RET(ctx, tfl__same_shape(dy->rank, dy->shape, y->rank, y->shape), NULL,
                  TFL_INVALID_ARGUMENT, "%s: dy must have y's shape %s, got %s",
                  tfl__op_defs[op].name, tfl__shape_str(y->rank, y->shape, sy, sizeof sy),
                  tfl__shape_str(dy->rank, dy->shape, sd, sizeof sd));
    int a = tfl__norm_axis(axis, y->rank > 0 ? y->rank : 1);
    TFL_CHECK_RET(ctx, a >= 0, NULL, TFL_INVALID_ARGUMENT,
                  "%s: axis %d is out of range for rank %d", tfl__op_defs[op].name, axis, y->rank);
    TFL_CHECK_RET(ctx, isfinite(scale), NULL, TFL_INVALID_ARGUMENT,
                  "%s: scale must be finite, got %g", tfl__op_defs[op].name, scale);
    const tfl__softmax_attrs attrs = {y->rank > 0 ? a : 0, 0, scale};
    return tfl__op_run(ctx, op, (tfl_dtype)y->dtype, 2, in, (tfl_dtype)y->dtype, y->rank,
                       y->shape, &attrs);
}
