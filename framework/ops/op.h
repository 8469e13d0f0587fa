/*
 * framework/ops/op.h: what op entry points, the dispatcher and device kernels share: the
 * kernel call record and the common path (tfl__op_run) that places an op, copies inputs
 * across devices, allocates the output and runs the kernel. The op definition table, the
 * attributes and the gradient ops, which tape/ uses too, are in core_api/op_api.h.
 */
#ifndef TFL_OPS_OP_H
#define TFL_OPS_OP_H

#include "internal.h"
#include "core_api/op_api.h" /* the op table, attributes and gradient ops */



/**
 * The common path of every op with a kernel. Places the op (device scopes, soft placement,
 * kernels by key dtype), copies inputs living elsewhere, runs float16/bfloat16 through
 * float32 for TFL_OPF_HALF_VIA_F32 ops, allocates the output (out_dtype, out_shape) and
 * runs the kernel. Returns the frame-owned output or NULL with the error kept.
 */
tfl_tensor *tfl__op_run(tfl_ctx *ctx, tfl__op_id op, tfl_dtype key, int n_in,
                        const tfl_tensor *const *in, tfl_dtype out_dtype, int out_rank,
                        const int64_t *out_shape, const void *attrs);

/** Checks inputs for NULL (INVALID_ARGUMENT "input i is NULL" unless an error is kept). */
bool tfl__check_inputs(tfl_ctx *ctx, tfl__op_id op, int n, const tfl_tensor *const *in);
/** Checks the key dtype against the op's accepted dtypes (INVALID_ARGUMENT with the list). */
bool tfl__check_dtype(tfl_ctx *ctx, tfl__op_id op, tfl_dtype dtype);
/** Checks two inputs have one dtype ("dtypes differ: a is int32, b is float32"). */
bool tfl__check_same_dtype(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *a,
                           const tfl_tensor *b);
/**
 * Mixed precision, as torch.autocast does it: under a BFLOAT16 or FLOAT16 policy
 * (tfl_ctx_set_precision), for an op with an input on a device other than the CPU, replaces
 * in[0..n) (NULL entries: optional inputs left out) by casts (recorded on the tape, so
 * gradients flow back in each input's dtype):
 * TFL_OPF_AMP_LOW ops (MatMul, the convolutions) get their float32 inputs in the policy's
 * 16-bit dtype; TFL_OPF_AMP_F32 ops (sums, softmax, losses, normalisation) get their 16-bit
 * inputs in float32; any other op with a 16-bit input gets its float32 inputs in 16 bits (a
 * bias added to a bfloat16 product). float64, integers and the CPU's tensors are left alone.
 * Call it after tfl__check_inputs and before the dtype checks. false: a cast failed (the
 * error is kept). Free under the float32 and tf32 policies.
 */
bool tfl__autocast_slow(tfl_ctx *ctx, tfl__op_id op, int n, const tfl_tensor **in);
static inline bool tfl__autocast(tfl_ctx *ctx, tfl__op_id op, int n, const tfl_tensor **in)
{
    return TFL_LIKELY(ctx->precision < TFL_PRECISION_BFLOAT16) ||
           tfl__autocast_slow(ctx, op, n, in);
}
/** Logs "op Name on DEVICE" when placement logging is on (views log too). */
void tfl__log_placement(tfl_ctx *ctx, tfl__op_id op, const tfl__device *dev);

/** Chooses the device for op on key dtype (scopes, soft placement); NULL with the error kept. */
tfl__device *tfl__place_op(tfl_ctx *ctx, tfl__op_id op, tfl_dtype key);

/** INVALID_ARGUMENT for a sparse label value v outside [0, classes) at flat index `index` of
 * labels, naming the value, the range and the position ("at labels[3, 1]"): the message of
 * every backend's SparseSoftmaxCrossEntropyWithLogits kernel (loss.c). */
tfl_status tfl__sparse_label_error(tfl_ctx *ctx, const tfl_tensor *labels, int64_t index, int64_t v,
                                  int64_t classes);

#endif /* TFL_OPS_OP_H */
