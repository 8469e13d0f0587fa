/*
 * framework/ops/loss.c: entry points of the fused losses from logits (softmax cross-entropy
 * with dense or sparse labels, sigmoid cross-entropy): input checks with messages naming
 * both operands, output shapes, then tfl__op_run. The kernels are in cpu/k_loss.c (softmax
 * ones) and cpu/k_elementwise.c (the sigmoid one, an elementwise op).
 */
#include "op.h"

#include <stdio.h>

/* logits floating, labels of the same dtype ("logits is float32, labels is float64") */
static bool check_float_pair(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor **plogits,
                             const tfl_tensor **plabels)
{
    const tfl_tensor *in[2] = {*plogits, *plabels};
    if (!tfl__check_inputs(ctx, op, 2, in) || !tfl__autocast(ctx, op, 2, in)) return false;
    const tfl_tensor *logits = *plogits = in[0], *labels = *plabels = in[1];
    if (!tfl__check_dtype(ctx, op, (tfl_dtype)logits->dtype)) return false;
    TFL_CHECK_RET(ctx, logits->dtype == labels->dtype, false, TFL_INVALID_ARGUMENT,
                  "%s: dtypes differ: logits is %s, labels is %s (tapeflow does not promote; "
                  "use tfl_cast)", tfl__op_defs[op].name, tfl_dtype_name((tfl_dtype)logits->dtype),
                  tfl_dtype_name((tfl_dtype)labels->dtype));
    return true;
}

tfl_tensor *tfl_softmax_cross_entropy(tfl_ctx *ctx, const tfl_tensor *logits,
                                      const tfl_tensor *labels, int axis)
{
    if (!ctx) return NULL;
    const tfl__op_id op = TFL_OP_SOFTMAX_XENT;
    const char *name = tfl__op_defs[op].name;
    if (!check_float_pair(ctx, op, &logits, &labels)) return NULL;
    char sa[128], sb[128];
    TFL_CHECK_RET(ctx, tfl__same_shape(logits->rank, logits->shape, labels->rank, labels->shape),
                  NULL, TFL_INVALID_ARGUMENT,
                  "%s: logits and labels must have the same shape, got logits %s and labels %s",
                  name, tfl__shape_str(logits->rank, logits->shape, sa, sizeof sa),
                  tfl__shape_str(labels->rank, labels->shape, sb, sizeof sb));
    TFL_CHECK_RET(ctx, logits->rank >= 1, NULL, TFL_INVALID_ARGUMENT,
                  "%s: logits must have rank >= 1 (the classes' axis), got shape ()", name);
    int a = tfl__norm_axis(axis, logits->rank);
    TFL_CHECK_RET(ctx, a >= 0, NULL, TFL_INVALID_ARGUMENT,
                  "%s: axis %d is out of range for rank %d", name, axis, logits->rank);
    int64_t shape[TFL_MAX_RANK];
    int rank = 0;
    for (int d = 0; d < logits->rank; d++)
        if (d != a) shape[rank++] = logits->shape[d];
    tfl__axis_attrs attrs = {a};
    const tfl_tensor *in[2] = {logits, labels};
    return tfl__op_run(ctx, op, (tfl_dtype)logits->dtype, 2, in, (tfl_dtype)logits->dtype, rank,
                       shape, &attrs);
}

tfl_tensor *tfl_sparse_softmax_cross_entropy(tfl_ctx *ctx, const tfl_tensor *logits,
                                             const tfl_tensor *labels)
{
    if (!ctx) return NULL;
    const tfl__op_id op = TFL_OP_SPARSE_SOFTMAX_XENT;
    const char *name = tfl__op_defs[op].name;
    const tfl_tensor *in[2] = {logits, labels};
    if (!tfl__check_inputs(ctx, op, 2, in) || !tfl__autocast(ctx, op, 1, &logits) ||
        !tfl__check_dtype(ctx, op, (tfl_dtype)logits->dtype))
        return NULL;
    in[0] = logits;
    TFL_CHECK_RET(ctx, tfl_dtype_is_integer((tfl_dtype)labels->dtype), NULL,
                  TFL_INVALID_ARGUMENT,
                  "%s: labels dtype %s is not supported; expected one of int32, int64", name,
                  tfl_dtype_name((tfl_dtype)labels->dtype));
    char sa[128], sb[128];
    TFL_CHECK_RET(ctx, logits->rank >= 1, NULL, TFL_INVALID_ARGUMENT,
                  "%s: logits must have rank >= 1 (classes on the last axis), got shape ()", name);
    TFL_CHECK_RET(ctx, tfl__same_shape(labels->rank, labels->shape, logits->rank - 1,
                                       logits->shape),
                  NULL, TFL_INVALID_ARGUMENT,
                  "%s: labels of shape %s must have the shape of logits %s without its last "
                  "axis", name, tfl__shape_str(labels->rank, labels->shape, sb, sizeof sb),
                  tfl__shape_str(logits->rank, logits->shape, sa, sizeof sa));
    return tfl__op_run(ctx, op, (tfl_dtype)logits->dtype, 2, in, (tfl_dtype)logits->dtype,
                       labels->rank, labels->shape, NULL);
}

tfl_tensor *tfl__sparse_softmax_xent_grad(tfl_ctx *ctx, const tfl_tensor *logits,
                                          const tfl_tensor *labels, const tfl_tensor *dy)
{
    if (!ctx) return NULL;
    const tfl__op_id op = TFL_OP_SPARSE_SOFTMAX_XENT_GRAD;
    const char *name = tfl__op_defs[op].name;
    const tfl_tensor *in[3] = {logits, labels, dy};
    if (!tfl__check_inputs(ctx, op, 3, in)) return NULL;
    const tfl_tensor *fl[2] = {logits, dy};
    if (!tfl__autocast(ctx, op, 2, fl) || !tfl__check_dtype(ctx, op, (tfl_dtype)fl[0]->dtype))
        return NULL;
    in[0] = logits = fl[0];
    in[2] = dy = fl[1];
    char sa[128], sb[128];
    TFL_CHECK_RET(ctx, tfl_dtype_is_integer((tfl_dtype)labels->dtype) && logits->rank >= 1 &&
                           tfl__same_shape(labels->rank, labels->shape, logits->rank - 1,
                                           logits->shape),
                  NULL, TFL_INVALID_ARGUMENT,
                  "%s: labels (%s %s) must be integers of the shape of logits %s without its "
                  "last axis", name, tfl_dtype_name((tfl_dtype)labels->dtype),
                  tfl__shape_str(labels->rank, labels->shape, sb, sizeof sb),
                  tfl__shape_str(logits->rank, logits->shape, sa, sizeof sa));
    TFL_CHECK_RET(ctx, dy->dtype == logits->dtype &&
                           tfl__same_shape(dy->rank, dy->shape, labels->rank, labels->shape),
                  NULL, TFL_INVALID_ARGUMENT,
                  "%s: dy (%s %s) must have the logits' dtype and the labels' shape", name,
                  tfl_dtype_name((tfl_dtype)dy->dtype),
                  tfl__shape_str(dy->rank, dy->shape, sb, sizeof sb));
    return tfl__op_run(ctx, op, (tfl_dtype)logits->dtype, 3, in, (tfl_dtype)logits->dtype,
                       logits->rank, logits->shape, NULL);
}

tfl_tensor *tfl_sigmoid_cross_entropy(tfl_ctx *ctx, const tfl_tensor *logits,
                                      const tfl_tensor *labels)
{
    if (!ctx) return NULL;
    const tfl__op_id op = TFL_OP_SIGMOID_XENT;
    if (!check_float_pair(ctx, op, &logits, &labels)) return NULL;
    int rank;
    int64_t shape[TFL_MAX_RANK];
    char sa[128], sb[128];
    TFL_CHECK_RET(ctx, tfl__broadcast_shapes(logits->rank, logits->shape, labels->rank,
                                             labels->shape, &rank, shape),
                  NULL, TFL_INVALID_ARGUMENT,
                  "%s: logits and labels must have broadcastable shapes, got logits %s and "
                  "labels %s", tfl__op_defs[op].name,
                  tfl__shape_str(logits->rank, logits->shape, sa, sizeof sa),
                  tfl__shape_str(labels->rank, labels->shape, sb, sizeof sb));
    const tfl_tensor *in[2] = {logits, labels};
    return tfl__op_run(ctx, op, (tfl_dtype)logits->dtype, 2, in, (tfl_dtype)logits->dtype, rank,
                       shape, NULL);
}

/* The kernels' message for a label outside [0, classes) (every backend's, op.h). */
tfl_status tfl__sparse_label_error(tfl_ctx *ctx, const tfl_tensor *labels, int64_t index, int64_t v,
                                  int64_t classes)
{
    char pos[160] = "";
    int64_t at[TFL_MAX_RANK];
    for (int d = labels->rank - 1; d >= 0; d--) {
        at[d] = index % labels->shape[d];
        index /= labels->shape[d];
    }
    size_t used = 0;
    for (int d = 0; d < labels->rank && used < sizeof pos; d++)
        used += (size_t)snprintf(pos + used, sizeof pos - used, d ? ", %lld" : "%lld",
                                 (long long)at[d]);
    return tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                          "SparseSoftmaxCrossEntropyWithLogits: Received a label value of %lld "
                          "which is outside the valid range of [0, %lld) at labels[%s]",
                          (long long)v, (long long)classes, pos);
}
