/*
 * tapeflow/ops.h: the operations on tensors. Every op:
 *  - takes the context first and returns a new tensor (frame-owned, see context.h) or NULL;
 *  - returns NULL when given a NULL input, keeping the first error, so a chain of calls is
 *    checked once at the end (tfl_ctx_status);
 *  - never promotes dtypes silently: int32 + float32 is an INVALID_ARGUMENT naming both
 *    (use tfl_cast);
 *  - broadcasts like NumPy where it combines tensors elementwise: shapes are aligned at
 *    their last dimension and a dimension of 1 stretches;
 *  - accepts a variable wherever a tensor is accepted.
 * float16 and bfloat16 are computed in float32 and rounded once per op.
 * An unsupported dtype gives INVALID_ARGUMENT naming the dtypes the op accepts.
 */
#ifndef TAPEFLOW_OPS_H
#define TAPEFLOW_OPS_H

#include <tapeflow/base.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- elementwise arithmetic (broadcasting; both inputs of one dtype) ---------------- */

/** a + b. All dtypes but bool. */
TFL_API tfl_tensor *tfl_add(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);
/** a - b. All dtypes but bool. */
TFL_API tfl_tensor *tfl_sub(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);
/** a * b. All dtypes but bool. */
TFL_API tfl_tensor *tfl_mul(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);
/**
 * a / b. Floating and complex: true division. Integers: floor division (TensorFlow's
 * floordiv, Python's //), and a zero divisor is INVALID_ARGUMENT "Integer division by zero".
 */
TFL_API tfl_tensor *tfl_div(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);
/**
 * a ** b. Floating, complex and integers; for integers a negative exponent is
 * INVALID_ARGUMENT "Integers to negative integer powers are not allowed".
 */
TFL_API tfl_tensor *tfl_pow(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);
/** max(a, b) and min(a, b) elementwise; integers and floating; NaN propagates. */
TFL_API tfl_tensor *tfl_maximum(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);
TFL_API tfl_tensor *tfl_minimum(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);

/* ---- elementwise unary --------------------------------------------------------------- */

/** -x. All dtypes but bool. */
TFL_API tfl_tensor *tfl_neg(tfl_ctx *ctx, const tfl_tensor *x);
/** e^x, ln x, sqrt x. Floating and complex (ln and sqrt of negative reals give NaN). */
TFL_API tfl_tensor *tfl_exp(tfl_ctx *ctx, const tfl_tensor *x);
TFL_API tfl_tensor *tfl_log(tfl_ctx *ctx, const tfl_tensor *x);
TFL_API tfl_tensor *tfl_sqrt(tfl_ctx *ctx, const tfl_tensor *x);
/** |x|. Integers and floating keep their dtype; complex64 gives float32, complex128 float64. */
TFL_API tfl_tensor *tfl_abs(tfl_ctx *ctx, const tfl_tensor *x);
/** The error function erf(x) = 2/sqrt(pi) * integral of e^(-t^2) from 0 to x. Floating. */
TFL_API tfl_tensor *tfl_erf(tfl_ctx *ctx, const tfl_tensor *x);
/**
 * -1, 0 or 1 by the sign of x (NaN stays NaN); complex x gives x / |x| (0 at 0), as
 * TensorFlow. Its gradient is zero.
 */
TFL_API tfl_tensor *tfl_sign(tfl_ctx *ctx, const tfl_tensor *x);
/** The complex conjugate; a real x gives a copy of x. */
TFL_API tfl_tensor *tfl_conj(tfl_ctx *ctx, const tfl_tensor *x);
/** A new tensor with x's values (a contiguous copy on the op's device). */
TFL_API tfl_tensor *tfl_identity(tfl_ctx *ctx, const tfl_tensor *x);

/* ---- activations (floating dtypes) --------------------------------------------------- */

/** max(x, 0). */
TFL_API tfl_tensor *tfl_relu(tfl_ctx *ctx, const tfl_tensor *x);
/** TensorFlow's ReluGrad: dy where features > 0, else 0 (relu's backward in one pass, also
 * for hand-written rules); the two broadcast together and share a floating dtype. */
TFL_API tfl_tensor *tfl_relu_grad(tfl_ctx *ctx, const tfl_tensor *dy, const tfl_tensor *features);
/** x if x > 0 else alpha * x (TensorFlow's default alpha is 0.2, PyTorch's 0.01). */
TFL_API tfl_tensor *tfl_leaky_relu(tfl_ctx *ctx, const tfl_tensor *x, double alpha);
/** 1 / (1 + e^-x), computed without overflow. */
TFL_API tfl_tensor *tfl_sigmoid(tfl_ctx *ctx, const tfl_tensor *x);
TFL_API tfl_tensor *tfl_tanh(tfl_ctx *ctx, const tfl_tensor *x);
/**
 * GELU. approximate = false: x/2 (1 + erf(x / sqrt 2)) (the default of TensorFlow and
 * PyTorch); true: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 */
TFL_API tfl_tensor *tfl_gelu(tfl_ctx *ctx, const tfl_tensor *x, bool approximate);
/**
 * Softplus, log(1 + e^x), computed as max(x, 0) + log1p(e^-|x|): no overflow, and exact for
 * every x. Keras's softplus; PyTorch's with beta = 1 up to its threshold (x > 20 there
 * returns x, which float32 cannot tell apart and float64 differs from by e^-x < 2.1e-9).
 * The gradient is sigmoid(x).
 */
TFL_API tfl_tensor *tfl_softplus(tfl_ctx *ctx, const tfl_tensor *x);
/**
 * SiLU, also called swish: x sigmoid(x) (Keras's silu and swish, PyTorch's silu; TensorFlow's
 * tf.nn.silu takes a beta, x sigmoid(beta x), which is tfl_mul(x, tfl_sigmoid(beta x))). The
 * gradient is s (1 + x (1 - s)) with s = sigmoid(x).
 */
TFL_API tfl_tensor *tfl_silu(tfl_ctx *ctx, const tfl_tensor *x);
/**
 * ELU: x if x > 0, else alpha (e^x - 1) (computed with expm1). Keras's and PyTorch's default
 * alpha is 1. The gradient is 1 for x > 0, else alpha e^x, which is alpha at 0 (PyTorch's
 * choice, and Keras's but for alpha = 1, where it gives 1); the second derivative at 0 is 0,
 * as PyTorch's.
 */
TFL_API tfl_tensor *tfl_elu(tfl_ctx *ctx, const tfl_tensor *x, double alpha);
/**
 * Hard sigmoid: relu6(x + 3) / 6, that is 0 for x <= -3, 1 for x >= 3 and x / 6 + 1/2 between
 * (Keras 3's hard_sigmoid and PyTorch's hardsigmoid; Keras 2 and TensorFlow 1 had slope 0.2,
 * clip(0.2 x + 0.5, 0, 1), which this is not). The gradient is 1/6 strictly between -3 and
 * 3, else 0 (0 at the kinks, as both).
 */
TFL_API tfl_tensor *tfl_hard_sigmoid(tfl_ctx *ctx, const tfl_tensor *x);
/** e^x / sum(e^x) along `axis` (negative counts from the end; -1 is the usual), max-shifted. */
TFL_API tfl_tensor *tfl_softmax(tfl_ctx *ctx, const tfl_tensor *x, int axis);
/** x - max - log(sum(e^(x - max))) along `axis`. */
TFL_API tfl_tensor *tfl_log_softmax(tfl_ctx *ctx, const tfl_tensor *x, int axis);
/**
 * Attention's softmax in one op: softmax(scale * scores) along the last axis of scores (...,
 * queries, keys), rank >= 2. With `causal`, entry (i, j) of the last two axes takes part only
 * for j <= i (a query sees the keys up to its own position, counted from the first: Keras's
 * use_causal_mask, PyTorch's is_causal) and is 0 otherwise, as softmax(scale * scores + mask)
 * with -inf above the diagonal; nothing is computed for the excluded entries. scale finite
 * (1 / sqrt(key_dim) in attention). The gradient is dx = scale y (dy - sum(dy y)) per row, one
 * fused op (differentiable again).
 * Errors: INVALID_ARGUMENT "AttentionSoftmax: scores must have rank 2 or more (..., queries,
 * keys), got rank 1", "AttentionSoftmax: scale must be finite, got inf", "AttentionSoftmax:
 * scale 1e+39 is past float32's range (scores are float16)"; dtypes as softmax.
 */
TFL_API tfl_tensor *tfl_attention_softmax(tfl_ctx *ctx, const tfl_tensor *scores, double scale,
                                          bool causal);

/* ---- losses from logits (fused, numerically stable; floating dtypes) ------------------- */
/* Per-example losses: reduce them (tfl_reduce_mean) for a batch loss. Mean squared error
 * needs no op of its own: with d = tfl_sub(ctx, predictions, targets), it is
 * tfl_reduce_mean(ctx, tfl_mul(ctx, d, d), 0, NULL, false). */

/**
 * Softmax cross-entropy with dense (probability) labels, TensorFlow's
 * softmax_cross_entropy_with_logits: -sum(labels * log_softmax(logits)) along `axis`
 * (negative counts from the end; -1 is the usual). logits and labels have one shape (rank
 * >= 1) and one dtype; the result has that shape without `axis`. One pass for the max and
 * one for the log-sum-exp and the loss, so logits of 1000 do not overflow; softmax is never
 * stored. Labels need not sum to 1 (the gradient uses their sum).
 * Gradients: d/dlogits = dy (softmax(logits) sum(labels) - labels),
 * d/dlabels = -dy log_softmax(logits), both differentiable again.
 * Errors: INVALID_ARGUMENT "SoftmaxCrossEntropyWithLogits: logits and labels must have the
 * same shape, got logits (2, 3) and labels (2, 4)", "...: dtypes differ: logits is float32,
 * labels is float64", "...: dtype int32 is not supported; expected one of float16,
 * bfloat16, float32, float64", "...: axis 2 is out of range for rank 2", rank 0 logits.
 */
TFL_API tfl_tensor *tfl_softmax_cross_entropy(tfl_ctx *ctx, const tfl_tensor *logits,
                                              const tfl_tensor *labels, int axis);
/**
 * Softmax cross-entropy with class indices, TensorFlow's
 * sparse_softmax_cross_entropy_with_logits: -log_softmax(logits)[..., labels[...]]. logits
 * (..., classes) are floating with the classes on the last axis; labels (...) are int32 or
 * int64 of logits' shape without that axis, which is the result's shape (logits' dtype).
 * Gradient: d/dlogits = dy (softmax(logits) - one_hot(labels)); labels get none.
 * Errors: INVALID_ARGUMENT "SparseSoftmaxCrossEntropyWithLogits: Received a label value of
 * 12 which is outside the valid range of [0, 10) at labels[1]" (checked when it runs, the
 * position as an index of labels), "...: labels of shape (4,) must have the shape of logits
 * (2, 3) without its last axis", "...: labels dtype float32 is not supported; expected one
 * of int32, int64", logits of a non-floating dtype or rank 0.
 */
TFL_API tfl_tensor *tfl_sparse_softmax_cross_entropy(tfl_ctx *ctx, const tfl_tensor *logits,
                                                     const tfl_tensor *labels);
/**
 * Sigmoid (binary) cross-entropy, TensorFlow's sigmoid_cross_entropy_with_logits,
 * elementwise: max(x, 0) - x z + log(1 + e^-|x|) for logits x and labels z (probabilities
 * of the positive class), which never overflows. One dtype; the shapes broadcast (NumPy
 * rules; TensorFlow asks for equal shapes, which is the common case) into the result's.
 * Gradients: dx = dy (sigmoid(x) - z), dz = -dy x.
 * Errors: INVALID_ARGUMENT "SigmoidCrossEntropyWithLogits: logits and labels must have
 * broadcastable shapes, got logits (2, 3) and labels (4,)", "...: dtypes differ: logits is
 * float32, labels is float64", non-floating dtypes.
 */
TFL_API tfl_tensor *tfl_sigmoid_cross_entropy(tfl_ctx *ctx, const tfl_tensor *logits,
                                              const tfl_tensor *labels);

/* ---- normalization and dropout (floating dtypes) ---------------------------------------- */
/* A BatchNormalization layer in training mode normalises with the batch's own statistics
 * (tfl_batch_norm_training, the same as tfl_moments(x, every axis but the last) feeding
 * tfl_batch_norm, which a tape differentiates through both: Keras's
 * BatchNormalization(training=True) to float rounding). In inference mode the layer passes
 * its moving averages to tfl_batch_norm instead. */

/**
 * y = (x - mean) * scale / sqrt(variance + epsilon) + offset, per channel along x's LAST
 * axis (TensorFlow's tf.nn.batch_normalization with [C] parameters). mean, variance, offset,
 * scale have shape [C] with C = x's last dimension; offset NULL means 0, scale NULL means 1.
 * epsilon > 0. x rank >= 1. Differentiable in all five inputs.
 *
 * One fused pass: per channel a = scale / sqrt(variance + epsilon) (in double, rounded to
 * the dtype), then y = (x - mean) * a + offset elementwise. float16/bfloat16 run in float32.
 * Gradients, with inv = 1 / sqrt(variance + epsilon) and sums over every axis but the last:
 *   dx = dy * scale * inv                      dmean     = -sum(dy * scale * inv)
 *   dvariance = sum(dy * (x - mean)) * scale * -inv^3 / 2
 *   doffset = sum(dy)                          dscale    = sum(dy * (x - mean)) * inv
 * written with ordinary ops, so they are differentiable again.
 * Errors: INVALID_ARGUMENT "BatchNorm: variance must have shape (3,) (the last dimension of x,
 * whose shape is (2, 3)), got (4,)" (any of the four parameters), "BatchNorm: epsilon must be
 * > 0, got 0" (NaN too), "BatchNorm: dtypes differ: x is float32, mean is float64 (...)",
 * "BatchNorm: dtype int32 is not supported; expected one of float16, bfloat16, float32,
 * float64", "BatchNorm: x must have rank >= 1 (channels on the last axis), got shape ()";
 * NULL x, mean or variance keeps the first error ("BatchNorm: input 1 is NULL").
 */
TFL_API tfl_tensor *tfl_batch_norm(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *mean,
                                   const tfl_tensor *variance, const tfl_tensor *offset,
                                   const tfl_tensor *scale, double epsilon);

/**
 * Batch normalization in training mode, fused (Keras's BatchNormalization(training=True),
 * TensorFlow's tf.nn.fused_batch_norm(is_training=True), PyTorch's batch_norm(training=True)):
 * per channel along x's LAST axis, the batch's mean and biased variance over every other
 * axis, then
 *   y = (x - mean) / sqrt(variance + epsilon) * gamma + beta
 * gamma and beta have shape (C); NULL means 1 and 0. epsilon > 0. x rank >= 1.
 * mean and variance, when not NULL, receive the batch's statistics as frame-owned (C)
 * tensors, for moving averages: a tape treats them as constants (y's gradient already
 * includes their dependence on x). On error they are NULL.
 *
 * Differentiable in x, gamma and beta, and again (second order): the same values and
 * gradients as tfl_moments feeding tfl_batch_norm, in far fewer passes over x (two forward,
 * two backward). Ops: BatchMoments (the statistics in one pass over x, summed in double in
 * blocks of rows combined in a fixed order, so the result never depends on threads),
 * BatchNormTraining (BatchNorm's pass with them); backward BatchNormParamGrad (one pass over
 * dy and x for dgamma and dbeta) and BatchNormTrainingGrad (one pass for dx). With rstd =
 * 1 / sqrt(variance + epsilon), xhat the normalised x, sums and means over every axis but
 * the last:
 *   dx = gamma rstd (dy - mean(dy) - xhat mean(dy xhat));  dgamma = sum(dy xhat);
 *   dbeta = sum(dy)
 * float16/bfloat16 run in float32 throughout (the statistics and the gradients' per-channel
 * sums too: a sum of dy over 65,504 rows would overflow float16), y, mean and variance
 * rounded once to the dtype. Under a mixed-precision policy on a GPU, x, gamma and beta of
 * the 16-bit dtype are cast to float32 alike.
 * Errors: INVALID_ARGUMENT "BatchNormTraining: gamma must have shape (3,) (the last dimension
 * of x, whose shape is (2, 3)), got (4,)" (beta likewise), "BatchNormTraining: epsilon must
 * be > 0, got 0" (NaN too), dtype mismatches and unsupported dtypes as tfl_batch_norm's,
 * "BatchNormTraining: x must have rank >= 1 (channels on the last axis), got shape ()"; a
 * NULL x keeps the first error ("BatchNormTraining: input 0 is NULL").
 */
TFL_API tfl_tensor *tfl_batch_norm_training(tfl_ctx *ctx, const tfl_tensor *x,
                                            const tfl_tensor *gamma, const tfl_tensor *beta,
                                            double epsilon, tfl_tensor **mean,
                                            tfl_tensor **variance);

/**
 * Layer normalization over x's LAST axis (Keras's LayerNormalization(axis=-1), PyTorch's
 * layer_norm over the last dimension): per row of C = x's last dimension,
 *   y = (x - mean) / sqrt(variance + epsilon) * gamma + beta
 * with the row's mean and biased variance. gamma and beta have shape (C); gamma NULL means
 * 1, beta NULL means 0. epsilon > 0 (Keras's default is 1e-3, PyTorch's 1e-5). x rank >= 1.
 * Differentiable in x, gamma and beta, and again (second order).
 *
 * One fused op, LayerNorm: the statistics are summed in double on the CPU (also for
 * float32), in the dtype on the GPU; float16/bfloat16 run in float32. Its gradient is one
 * fused op too, LayerNormGrad (with g = dy gamma, xhat the normalised x, rstd =
 * 1 / sqrt(variance + epsilon), means over the row):
 *   dx = rstd (g - mean(g) - xhat mean(g xhat));  dgamma = sum(dy xhat);  dbeta = sum(dy)
 * the parameters' sums over every axis but the last.
 * Errors: INVALID_ARGUMENT "LayerNorm: gamma must have shape (3,) (the last dimension of x,
 * whose shape is (2, 3)), got (4,)" (beta likewise), "LayerNorm: epsilon must be > 0, got 0"
 * (NaN too), "LayerNorm: dtypes differ: x is float32, gamma is float64 (...)", "LayerNorm:
 * dtype int32 is not supported; expected one of float16, bfloat16, float32, float64",
 * "LayerNorm: x must have rank >= 1 (features on the last axis), got shape ()"; a NULL x keeps
 * the first error ("LayerNorm: input 0 is NULL").
 */
TFL_API tfl_tensor *tfl_layer_norm(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *gamma,
                                   const tfl_tensor *beta, double epsilon);

/**
 * tf.nn.moments: mean and (biased, divide by count) variance over `axes`; both frame-owned.
 * Composition of ordinary ops (so differentiable); returns TFL_OK or the error.
 *
 *   mean = reduce_mean(x, axes);  variance = reduce_mean((x - mean)^2, axes)
 *
 * TensorFlow writes stop_gradient(mean) in the variance: the same values and first-order
 * gradients (d variance / d mean = 0), but its second-order gradients miss that the mean moves
 * with x; here they are right. float16/bfloat16 are computed in float32 and rounded once, as
 * TensorFlow does.
 * naxes >= 1 axes (negative counts from the end, no repeats); keepdims keeps them as size 1.
 * On error *mean and *variance are NULL.
 * Errors: INVALID_ARGUMENT "Moments: axis 2 is out of range for rank 2", "Moments: axis 1 is
 * given twice", "Moments: axes must name at least one axis (got naxes 0)", "Moments: dtype int32
 * is not supported; ...", NULL mean or variance pointers; a NULL x returns the kept error
 * (INVALID_ARGUMENT "Moments: x is NULL" when none is kept).
 */
TFL_API tfl_status tfl_moments(tfl_ctx *ctx, const tfl_tensor *x, int naxes, const int *axes,
                               bool keepdims, tfl_tensor **mean, tfl_tensor **variance);

/**
 * Inverted dropout: each element kept with probability 1 - rate and scaled by 1/(1 - rate),
 * else 0. 0 <= rate < 1 (rate 0 returns x unchanged, as an identity). seed != 0: the mask is a
 * pure function of (seed, element index); seed 0: the ctx's next stream (resolved once at the
 * call, kept in the op's attrs so the backward rule reuses the same mask).
 *
 * Mask layout (random.h's notation; what a GPU kernel reproduces). key = (lo(seed), hi(seed))
 * for seed != 0, else the ctx's next stream key exactly as random.h derives it (rate 0 takes
 * no stream). With D = 0x44524F50 ("DROP", so a mask never repeats a random_uniform draw of
 * the same seed), element i (row-major flat index) takes its uniform from
 *     R = philox((lo(i/4), hi(i/4), 0, D), key);   U = u24(R[i%4])
 * for every dtype (24 bits resolve a rate to 6e-8, and float32 and float64 tensors of one
 * shape and seed drop the same elements), and is kept when U >= rate, compared in double, as
 * TensorFlow keeps random_uniform >= rate. A kept element is x / (1 - rate) computed in double
 * and rounded once to the dtype; a dropped one is 0 (even for NaN or inf x). The mask depends
 * on (key, i) only: never on threads, chunking or the device.
 * Gradient: dx = dropout(dy) with the same rate and key (linear and self-adjoint).
 * Errors: INVALID_ARGUMENT "Dropout: rate must be a scalar tensor or a float in the range
 * [0, 1), got 1" (TensorFlow's words; negative, >= 1 and NaN), "Dropout: dtype int32 is not
 * supported; expected one of float16, bfloat16, float32, float64".
 */
TFL_API tfl_tensor *tfl_dropout(tfl_ctx *ctx, const tfl_tensor *x, double rate, uint64_t seed);

/* ---- comparisons and logic (results are bool) ----------------------------------------- */

/** a == b and a != b: every dtype. */
TFL_API tfl_tensor *tfl_equal(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);
TFL_API tfl_tensor *tfl_not_equal(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);
/** Ordering comparisons: integers and floating (NaN compares false). */
TFL_API tfl_tensor *tfl_less(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);
TFL_API tfl_tensor *tfl_less_equal(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);
TFL_API tfl_tensor *tfl_greater(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);
TFL_API tfl_tensor *tfl_greater_equal(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);
/** Logic on bool tensors. */
TFL_API tfl_tensor *tfl_logical_and(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);
TFL_API tfl_tensor *tfl_logical_or(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);
TFL_API tfl_tensor *tfl_logical_not(tfl_ctx *ctx, const tfl_tensor *x);

/* ---- reductions ------------------------------------------------------------------------- */

/**
 * Reduces over `axes` (n_axes of them, negative counts from the end, no repeats); n_axes 0
 * reduces over every axis. keepdims keeps reduced axes with size 1.
 * sum and mean: every dtype but bool (mean of integers truncates, as TensorFlow);
 * max and min: integers and floating (an empty reduction is INVALID_ARGUMENT).
 */
TFL_API tfl_tensor *tfl_reduce_sum(tfl_ctx *ctx, const tfl_tensor *x, int n_axes,
                                   const int *axes, bool keepdims);
TFL_API tfl_tensor *tfl_reduce_mean(tfl_ctx *ctx, const tfl_tensor *x, int n_axes,
                                    const int *axes, bool keepdims);
TFL_API tfl_tensor *tfl_reduce_max(tfl_ctx *ctx, const tfl_tensor *x, int n_axes,
                                   const int *axes, bool keepdims);
TFL_API tfl_tensor *tfl_reduce_min(tfl_ctx *ctx, const tfl_tensor *x, int n_axes,
                                   const int *axes, bool keepdims);
/** The index (int64) of the largest / smallest value along `axis`; the first on ties. */
TFL_API tfl_tensor *tfl_argmax(tfl_ctx *ctx, const tfl_tensor *x, int axis);
TFL_API tfl_tensor *tfl_argmin(tfl_ctx *ctx, const tfl_tensor *x, int axis);

/* ---- matmul ---------------------------------------------------------------------------- */

#define TFL_TRANSPOSE_A 1u /* use a's last two axes transposed (no conjugation) */
#define TFL_TRANSPOSE_B 2u /* use b's last two axes transposed */

/**
 * Matrix product over the last two axes: a (..., m, k) times b (..., k, n) gives
 * (..., m, n); leading (batch) axes broadcast. Both inputs rank >= 2, one dtype.
 * float32, float64, complex64 and complex128 run on BLIS; int32 and int64 on a plain loop.
 * Errors: INVALID_ARGUMENT (rank < 2, inner dimensions differ, dtype).
 */
TFL_API tfl_tensor *tfl_matmul(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b,
                               unsigned flags);
/**
 * op(a) op(b) + bias in one op (TensorFlow's _FusedMatMul with BiasAdd, PyTorch's addmm): the
 * matrix product as tfl_matmul's (same flags, batch axes broadcast), plus a bias of shape (n,)
 * added to every row; a dense layer's op. float32 and float64 (float16 and bfloat16 run as
 * tfl_matmul then tfl_add). Every element is rounded as tfl_matmul then tfl_add would round it,
 * so the result is bitwise the same as those two ops, without the intermediate tensor: the
 * CPU's AVX-512 kernel adds the bias to each tile of the product while it is in registers,
 * other CPU paths to each product's rows right after it; a GPU adds it by a second kernel.
 * Errors: tfl_matmul's; INVALID_ARGUMENT when the bias is not of shape (n,) or its dtype
 * differs.
 */
TFL_API tfl_tensor *tfl_matmul_bias(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b,
                                    const tfl_tensor *bias, unsigned flags);

/* ---- convolution and pooling (2-D, TensorFlow/Keras layouts) -------------------------- */
/*
 * Images are NHWC, input (N, H, W, C); filters are HWIO, (KH, KW, Cin, Cout); results are
 * NHWC. Floating dtypes only (float16 and bfloat16 compute in float32); operands of one op
 * share one dtype. An empty batch (N = 0) or zero channels give an empty or zero result.
 *
 * Output size along one spatial axis, for input size `in`, window k (the filter's KH or KW,
 * or the pooling ksize), stride s and dilation d (pooling: d = 1), with the effective window
 * ke = (k - 1) d + 1 (TensorFlow's rules, kernel_shape_util.cc):
 *   VALID: out = floor((in - ke) / s) + 1, no padding; the window must fit (in >= ke);
 *   SAME:  out = ceil(in / s); pad_total = max((out - 1) s + ke - in, 0) elements are
 *          added, pad_before = floor(pad_total / 2) before the first row (column) and the
 *          rest after it, so an odd total puts the extra element at the end.
 * An output size <= 0 (a window that does not fit under VALID, or an empty image) is an
 * error; output element (oh, ow) reads input rows oh s - pad_before + i d, i < k (columns
 * alike), and padded positions read 0 in a convolution and nothing in pooling.
 */

/** Padding of the spatial axes (see the rules above). */
typedef enum tfl_padding { TFL_PADDING_VALID = 0, TFL_PADDING_SAME = 1 } tfl_padding;

/** Options of the convolutions; NULL options: strides 1, dilations 1, VALID. */
typedef struct tfl_conv2d_opts {
    int strides[2];    /* (height, width), >= 0; 0 means 1 */
    int dilations[2];  /* (height, width), >= 0; 0 means 1 (1: no holes in the filter) */
    tfl_padding padding;
} tfl_conv2d_opts;    /* NULL opts: strides 1, dilations 1, VALID */

/**
 * 2-D convolution, TensorFlow's Conv2D (a cross-correlation, as in every framework):
 *   y[n, oh, ow, co] = sum over i < KH, j < KW, ci < Cin of
 *       x[n, oh sh - pt + i dh, ow sw - pl + j dw, ci] * filter[i, j, ci, co]
 * with x read as 0 outside the image (pt, pl: the padding before, rules above). input
 * (N, H, W, Cin), filter (KH, KW, Cin, Cout) give (N, OH, OW, Cout). On the CPU: im2col and
 * one GEMM per chunk of images (1x1, stride 1, VALID: one GEMM on the input itself); the
 * GEMMs run on BLIS, or on a register-tiled AVX-512 kernel where Cout is narrow.
 * Gradients: d/dinput = tfl_conv2d_backprop_input(input's shape, filter, dy),
 * d/dfilter = tfl_conv2d_backprop_filter(input, filter's shape, dy); both differentiable.
 * Errors (INVALID_ARGUMENT): "Conv2D: input must be 4-dimensional (N, H, W, C), got shape
 * (5, 5, 3)", the same for the filter (KH, KW, Cin, Cout); "Conv2D: input depth 3 does not
 * match the filter's input depth 2: input shape (1, 5, 5, 3), filter shape (3, 3, 2, 4)";
 * "Conv2D: strides must be >= 0 (0 means 1), got (-1, 1)", the same for dilations; an
 * unknown padding; "Conv2D: computed output height would be 0 [input height 2, effective
 * filter height 3 (filter 3, dilation 1), stride 1, VALID padding]: the window does not fit
 * in the input" (width alike); dtypes that differ or are not floating.
 */
TFL_API tfl_tensor *tfl_conv2d(tfl_ctx *ctx, const tfl_tensor *input, const tfl_tensor *filter,
                               const tfl_conv2d_opts *opts);
/**
 * The gradient of tfl_conv2d with respect to its input, TensorFlow's Conv2DBackpropInput
 * (and, read forwards, a transposed convolution): for an input of input_shape (N, H, W,
 * Cin), filter (KH, KW, Cin, Cout) and dy of the convolution's output shape (N, OH, OW,
 * Cout) under the same opts,
 *   dx[n, h, w, ci] = sum of dy[n, oh, ow, co] * filter[i, j, ci, co] over every (oh, ow,
 *       i, j, co) with oh sh - pt + i dh = h and ow sw - pl + j dw = w.
 * The result has input_shape. On the CPU: one GEMM dy filter^T per chunk, then col2im; at
 * stride 1 with over 512 taps, a Conv2D of dy by the filter flipped in space with its
 * channels swapped (im2col of dy, a GEMM as wide as Cin) where that GEMM is narrow enough.
 * Gradients: d/dfilter = tfl_conv2d_backprop_filter(ddx, filter's shape, dy),
 * d/ddy = tfl_conv2d(ddx, filter).
 * Errors (INVALID_ARGUMENT): input_shape NULL or with a negative dimension; "Conv2DBackprop
 * Input: dy shape (1, 4, 4, 4) does not match the output shape (1, 3, 3, 4) of input shape
 * (1, 5, 5, 2), filter shape (3, 3, 2, 4) and these options"; and those of tfl_conv2d for
 * the filter, depths, strides, dilations, padding, output size and dtypes.
 */
TFL_API tfl_tensor *tfl_conv2d_backprop_input(tfl_ctx *ctx, const int64_t input_shape[4],
                                              const tfl_tensor *filter, const tfl_tensor *dy,
                                              const tfl_conv2d_opts *opts);
/**
 * The gradient of tfl_conv2d with respect to its filter, TensorFlow's Conv2DBackpropFilter:
 * for input (N, H, W, Cin), a filter of filter_shape (KH, KW, Cin, Cout) and dy of the
 * convolution's output shape (N, OH, OW, Cout) under the same opts,
 *   dfilter[i, j, ci, co] = sum over n, oh, ow of
 *       x[n, oh sh - pt + i dh, ow sw - pl + j dw, ci] * dy[n, oh, ow, co]
 * (x read as 0 outside the image). The result has filter_shape. On the CPU: im2col(x)^T dy,
 * one GEMM per chunk of images, summed. Gradients: d/dinput = tfl_conv2d_backprop_input(
 * input's shape, ddw, dy), d/ddy = tfl_conv2d(input, ddw).
 * Errors: as tfl_conv2d_backprop_input, with filter_shape in place of the filter.
 */
TFL_API tfl_tensor *tfl_conv2d_backprop_filter(tfl_ctx *ctx, const tfl_tensor *input,
                                               const int64_t filter_shape[4], const tfl_tensor *dy,
                                               const tfl_conv2d_opts *opts);

/** Options of the pooling ops (no NULL: the window has no default). */
typedef struct tfl_pool2d_opts {
    int ksize[2];      /* window (height, width), >= 1 */
    int strides[2];    /* >= 0; 0 means the window size (Keras's default) */
    tfl_padding padding;
} tfl_pool2d_opts;

/**
 * 2-D max pooling, TensorFlow's MaxPool: input (N, H, W, C) gives (N, OH, OW, C) with
 *   y[n, oh, ow, c] = max of x[n, oh sh - pt + i, ow sw - pl + j, c], i < KH, j < KW,
 * over the positions inside the image (SAME padding is never a candidate, so it never wins).
 * Gradient: dy goes to the window's maximum (the first in row-major window order on ties,
 * as TensorFlow's CPU kernel): TensorFlow's MaxPoolGrad, differentiable again (MaxPoolGrad-
 * Grad gathers at the same positions).
 * Errors (INVALID_ARGUMENT): "MaxPool: input must be 4-dimensional (N, H, W, C), got shape
 * (4, 4)"; opts NULL; "MaxPool: ksize must be >= 1, got (0, 2)"; "MaxPool: strides must be
 * >= 0 (0 means the window size), got (-1, 2)"; an unknown padding; "MaxPool: computed
 * output height would be 0 [input height 2, window height 3, stride 3, VALID padding]: the
 * window does not fit in the input"; a dtype that is not floating.
 */
TFL_API tfl_tensor *tfl_max_pool2d(tfl_ctx *ctx, const tfl_tensor *input,
                                   const tfl_pool2d_opts *opts);
/**
 * 2-D average pooling, TensorFlow's AvgPool: as tfl_max_pool2d with the mean of the window's
 * positions inside the image in place of the max; under SAME padding the divisor is the count
 * of those positions, not KH KW (TensorFlow's rule; padded zeros do not dilute the mean).
 * Gradient: each window's dy / count spread over its positions (AvgPoolGrad, linear, whose
 * own gradient is average pooling again). Errors: as tfl_max_pool2d, named "AvgPool".
 */
TFL_API tfl_tensor *tfl_avg_pool2d(tfl_ctx *ctx, const tfl_tensor *input,
                                   const tfl_pool2d_opts *opts);

/* ---- shape and indexing ---------------------------------------------------------------- */

/**
 * x with a new shape of the same element count; one dimension may be -1 (inferred).
 * A view of x's storage when x is contiguous, a copy otherwise.
 */
TFL_API tfl_tensor *tfl_reshape(tfl_ctx *ctx, const tfl_tensor *x, int rank,
                                const int64_t *shape);
/** Permutes the axes: output axis i is input axis perm[i]; perm NULL reverses them. A view. */
TFL_API tfl_tensor *tfl_transpose(tfl_ctx *ctx, const tfl_tensor *x, const int *perm);
/** Joins n >= 1 tensors of one dtype along `axis`; other dimensions must agree. */
TFL_API tfl_tensor *tfl_concat(tfl_ctx *ctx, int n, const tfl_tensor *const *xs, int axis);
/**
 * x[begin[i] : begin[i] + size[i]] on every axis (rank entries each); size -1 takes the
 * rest of the axis. A view. Errors: INVALID_ARGUMENT (out of bounds: 0 <= begin[i] <=
 * dim and 0 <= size[i] <= dim - begin[i], checked without computing begin + size).
 */
TFL_API tfl_tensor *tfl_slice(tfl_ctx *ctx, const tfl_tensor *x, const int64_t *begin,
                              const int64_t *size);
/**
 * Takes slices of `params` along `axis` at `indices` (int32 or int64): the output shape is
 * params.shape[:axis] + indices.shape + params.shape[axis+1:].
 * Errors: INVALID_ARGUMENT (an index outside [0, dim), as TensorFlow's CPU kernel).
 */
TFL_API tfl_tensor *tfl_gather(tfl_ctx *ctx, const tfl_tensor *params,
                               const tfl_tensor *indices, int axis);
/**
 * One-hot encoding: indices (int32/int64) of shape S give S + (depth,) of `dtype`, with
 * on_value at the index and off_value elsewhere; an index outside [0, depth) gives a row
 * of off_value (TensorFlow's rule).
 */
TFL_API tfl_tensor *tfl_one_hot(tfl_ctx *ctx, const tfl_tensor *indices, int64_t depth,
                                double on_value, double off_value, tfl_dtype dtype);
/**
 * x converted to `dtype`. Floating to integer truncates toward zero and saturates (NaN
 * gives 0); complex to real keeps the real part; anything to bool is x != 0.
 */
TFL_API tfl_tensor *tfl_cast(tfl_ctx *ctx, const tfl_tensor *x, tfl_dtype dtype);
/**
 * x stretched to `shape` (rank entries) by NumPy broadcasting: x's shape, aligned at the
 * last axis, must have each dimension equal to shape's or 1. A new contiguous tensor.
 */
TFL_API tfl_tensor *tfl_broadcast_to(tfl_ctx *ctx, const tfl_tensor *x, int rank,
                                     const int64_t *shape);
/**
 * x with before[i] elements added in front of and after[i] behind axis i (rank entries
 * each, >= 0), all holding `value` (TensorFlow's PadV2 with a constant).
 */
TFL_API tfl_tensor *tfl_pad(tfl_ctx *ctx, const tfl_tensor *x, const int64_t *before,
                            const int64_t *after, double value);
/**
 * Sums slices of `data` into num_segments slots along `axis` (TensorFlow's
 * unsorted_segment_sum, generalised to an axis as gather is): data's shape is
 * out.shape[:axis] + segment_ids.shape + out.shape[axis+1:], and
 * out[..., s, ...] = sum of data[..., j, ...] over the positions j with segment_ids[j] == s
 * (0 where none). It is gather's adjoint: the gradient of tfl_gather with respect to params.
 * segment_ids are int32 or int64; one outside [0, num_segments) is INVALID_ARGUMENT.
 */
TFL_API tfl_tensor *tfl_unsorted_segment_sum(tfl_ctx *ctx, const tfl_tensor *data,
                                             const tfl_tensor *segment_ids,
                                             int64_t num_segments, int axis);
/**
 * x itself as far as values go, but no gradient flows through it: a tape treats the result
 * as a constant (TensorFlow's stop_gradient). A view; costs no copy.
 */
TFL_API tfl_tensor *tfl_stop_gradient(tfl_ctx *ctx, const tfl_tensor *x);
/** Ops in the op table, and an op's TensorFlow name ("MatMul"; NULL out of range): for
 * tools and tests that walk every op (the gradient checks do). */
TFL_API int tfl_op_count(void);
TFL_API const char *tfl_op_name(int op);
/** cond ? x : y elementwise; cond is bool; the three broadcast together; x and y one dtype. */
TFL_API tfl_tensor *tfl_where(tfl_ctx *ctx, const tfl_tensor *cond, const tfl_tensor *x,
                              const tfl_tensor *y);

#ifdef __cplusplus
}
#endif
#endif /* TAPEFLOW_OPS_H */
