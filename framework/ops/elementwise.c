/*
 * framework/ops/elementwise.c: entry points of the elementwise ops (arithmetic,
 * comparisons, logic, unary math and activations). Each validates its inputs, infers the
 * broadcast shape and the output dtype, and hands over to tfl__op_run.
 */
#include "op.h"

/* Binary elementwise op: same dtype, NumPy broadcasting; out_bool for comparisons. */
static tfl_tensor *binary(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *a, const tfl_tensor *b,
                          bool out_bool)
{
    if (!ctx) return NULL;
    const tfl_tensor *in[2] = {a, b};
    if (!tfl__check_inputs(ctx, op, 2, in) || !tfl__check_same_dtype(ctx, op, a, b) ||
        !tfl__check_dtype(ctx, op, (tfl_dtype)a->dtype))
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
    tfl_dtype out = out_bool ? TFL_DTYPE_BOOL : (tfl_dtype)a->dtype;
    return tfl__op_run(ctx, op, (tfl_dtype)a->dtype, 2, in, out, rank, shape, NULL);
}

static tfl_tensor *unary_attrs(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *x,
                               const void *attrs)
{
    if (!ctx) return NULL;
    if (!tfl__check_inputs(ctx, op, 1, &x) || !tfl__check_dtype(ctx, op, (tfl_dtype)x->dtype))
        return NULL;
    tfl_dtype out = (tfl_dtype)x->dtype;
    if (op == TFL_OP_ABS && out == TFL_DTYPE_COMPLEX64) out = TFL_DTYPE_FLOAT32;
    if (op == TFL_OP_ABS && out == TFL_DTYPE_COMPLEX128) out = TFL_DTYPE_FLOAT64;
    if (op == TFL_OP_LOGICAL_NOT) out = TFL_DTYPE_BOOL;
    return tfl__op_run(ctx, op, (tfl_dtype)x->dtype, 1, &x, out, x->rank, x->shape, attrs);
}

static tfl_tensor *unary(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *x)
{
    return unary_attrs(ctx, op, x, NULL);
}

#define BINARY_OP(fname, OP, out_bool)                                                  \
    tfl_tensor *fname(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b)           \
    {                                                                                   \
        return binary(ctx, TFL_OP_##OP, a, b, out_bool);                                \
    }
BINARY_OP(tfl_relu_grad, RELU_GRAD, false)
BINARY_OP(tfl_add, ADD, false)
BINARY_OP(tfl_sub, SUB, false)
BINARY_OP(tfl_mul, MUL, false)
BINARY_OP(tfl_div, DIV, false)
BINARY_OP(tfl_pow, POW, false)
BINARY_OP(tfl_maximum, MAXIMUM, false)
BINARY_OP(tfl_minimum, MINIMUM, false)
BINARY_OP(tfl_equal, EQUAL, true)
BINARY_OP(tfl_not_equal, NOT_EQUAL, true)
BINARY_OP(tfl_less, LESS, true)
BINARY_OP(tfl_less_equal, LESS_EQUAL, true)
BINARY_OP(tfl_greater, GREATER, true)
BINARY_OP(tfl_greater_equal, GREATER_EQUAL, true)
BINARY_OP(tfl_logical_and, LOGICAL_AND, true)
BINARY_OP(tfl_logical_or, LOGICAL_OR, true)
#undef BINARY_OP

#define UNARY_OP(fname, OP)                                                             \
    tfl_tensor *fname(tfl_ctx *ctx, const tfl_tensor *x) { return unary(ctx, TFL_OP_##OP, x); }
UNARY_OP(tfl_identity, IDENTITY)
UNARY_OP(tfl_neg, NEG)
UNARY_OP(tfl_exp, EXP)
UNARY_OP(tfl_log, LOG)
UNARY_OP(tfl_sqrt, SQRT)
UNARY_OP(tfl_abs, ABS)
UNARY_OP(tfl_relu, RELU)
UNARY_OP(tfl_sigmoid, SIGMOID)
UNARY_OP(tfl_tanh, TANH)
UNARY_OP(tfl_logical_not, LOGICAL_NOT)
UNARY_OP(tfl_erf, ERF)
UNARY_OP(tfl_sign, SIGN)
#undef UNARY_OP

tfl_tensor *tfl_conj(tfl_ctx *ctx, const tfl_tensor *x)
{
    if (ctx && x && !tfl_dtype_is_complex((tfl_dtype)x->dtype)) return tfl_identity(ctx, x);
    return unary(ctx, TFL_OP_CONJ, x);
}

tfl_tensor *tfl_leaky_relu(tfl_ctx *ctx, const tfl_tensor *x, double alpha)
{
    tfl__scalar_attrs attrs = {alpha};
    return unary_attrs(ctx, TFL_OP_LEAKY_RELU, x, &attrs);
}

tfl_tensor *tfl_gelu(tfl_ctx *ctx, const tfl_tensor *x, bool approximate)
{
    tfl__scalar_attrs attrs = {approximate ? 1.0 : 0.0};
    return unary_attrs(ctx, TFL_OP_GELU, x, &attrs);
}

/* softmax and log_softmax along one axis */
static tfl_tensor *softmax_like(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *x, int axis)
{
    if (!ctx) return NULL;
    if (!tfl__check_inputs(ctx, op, 1, &x) || !tfl__check_dtype(ctx, op, (tfl_dtype)x->dtype))
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
