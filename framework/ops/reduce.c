/*
 * framework/ops/reduce.c: entry points of the reductions (sum, mean, max, min over a set
 * of axes; argmax and argmin along one axis): axis validation and output shapes.
 */
#include "op.h"

static tfl_tensor *reduce(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *x, int n_axes,
                          const int *axes, bool keepdims)
{
    if (!ctx) return NULL;
    const char *name = tfl__op_defs[op].name;
    if (!tfl__check_inputs(ctx, op, 1, &x) || !tfl__autocast(ctx, op, 1, &x) ||
        !tfl__check_dtype(ctx, op, (tfl_dtype)x->dtype))
        return NULL;
    TFL_CHECK_RET(ctx, n_axes >= 0 && (n_axes == 0 || axes), NULL, TFL_INVALID_ARGUMENT,
                  "%s: n_axes is %d but axes is %s", name, n_axes, axes ? "set" : "NULL");
    tfl__reduce_attrs attrs = {{0}, 1};
    for (int i = 0; i < n_axes; i++) {
        int a = tfl__norm_axis(axes[i], x->rank);
        TFL_CHECK_RET(ctx, a >= 0, NULL, TFL_INVALID_ARGUMENT,
                      "%s: axis %d is out of range for rank %d", name, axes[i], x->rank);
        TFL_CHECK_RET(ctx, !attrs.reduced[a], NULL, TFL_INVALID_ARGUMENT,
                      "%s: axis %d is given twice", name, axes[i]);
        attrs.reduced[a] = 1;
    }
    int rank = 0;
    int64_t shape[TFL_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        if (n_axes == 0) attrs.reduced[d] = 1;
        if (attrs.reduced[d]) {
            attrs.count *= x->shape[d];
            if (keepdims) shape[rank++] = 1;
        } else {
            shape[rank++] = x->shape[d];
        }
    }
    TFL_CHECK_RET(ctx, attrs.count > 0 || (op != TFL_OP_MAX && op != TFL_OP_MIN) ||
                  tfl__numel(rank, shape) == 0, NULL, TFL_INVALID_ARGUMENT,
                  "%s: cannot reduce an empty axis (no identity for max/min)", name);
    return tfl__op_run(ctx, op, (tfl_dtype)x->dtype, 1, &x, (tfl_dtype)x->dtype, rank, shape, &attrs);
}

tfl_tensor *tfl_reduce_sum(tfl_ctx *ctx, const tfl_tensor *x, int n, const int *axes, bool keep)
{
    return reduce(ctx, TFL_OP_SUM, x, n, axes, keep);
}

tfl_tensor *tfl_reduce_mean(tfl_ctx *ctx, const tfl_tensor *x, int n, const int *axes, bool keep)
{
    return reduce(ctx, TFL_OP_MEAN, x, n, axes, keep);
}

tfl_tensor *tfl_reduce_max(tfl_ctx *ctx, const tfl_tensor *x, int n, const int *axes, bool keep)
{
    return reduce(ctx, TFL_OP_MAX, x, n, axes, keep);
}

tfl_tensor *tfl_reduce_min(tfl_ctx *ctx, const tfl_tensor *x, int n, const int *axes, bool keep)
{
    return reduce(ctx, TFL_OP_MIN, x, n, axes, keep);
}

static tfl_tensor *arg_reduce(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *x, int axis)
{
    if (!ctx) return NULL;
    const char *name = tfl__op_defs[op].name;
    if (!tfl__check_inputs(ctx, op, 1, &x) || !tfl__check_dtype(ctx, op, (tfl_dtype)x->dtype))
        return NULL;
    int a = tfl__norm_axis(axis, x->rank);
    TFL_CHECK_RET(ctx, a >= 0, NULL, TFL_INVALID_ARGUMENT, "%s: axis %d is out of range for rank %d",
                  name, axis, x->rank);
    TFL_CHECK_RET(ctx, x->shape[a] > 0, NULL, TFL_INVALID_ARGUMENT,
                  "%s: cannot reduce an empty axis %d", name, axis);
    int64_t shape[TFL_MAX_RANK];
    int rank = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != a) shape[rank++] = x->shape[d];
    tfl__axis_attrs attrs = {a};
    return tfl__op_run(ctx, op, (tfl_dtype)x->dtype, 1, &x, TFL_DTYPE_INT64, rank, shape, &attrs);
}

tfl_tensor *tfl_argmax(tfl_ctx *ctx, const tfl_tensor *x, int axis)
{
    return arg_reduce(ctx, TFL_OP_ARGMAX, x, axis);
}

tfl_tensor *tfl_argmin(tfl_ctx *ctx, const tfl_tensor *x, int axis)
{
    return arg_reduce(ctx, TFL_OP_ARGMIN, x, axis);
}
