/* test_gradcheck.c: every op's backward rule against finite differences (gradcheck.h), over
 * the whole op table: an op the table has but this file does not check fails `coverage`,
 * so a new op cannot land without a passing gradient check. Each case is one cmocka test
 * named "<Op>/<label>". */
#include "gradcheck.h"

/* ---- builders: f(x) for each case (constants take x[0]'s dtype) ---------------------------- */

#define B(name) static tfl_tensor *name(tfl_ctx *ctx, tfl_tensor *const *x)
#define DT(t) tfl_tensor_dtype(t)

static tfl_tensor *cst(tfl_ctx *ctx, const tfl_tensor *like, double v)
{
    return tfl_fill(ctx, DT(like), 0, NULL, v);
}

static tfl_tensor *ids(tfl_ctx *ctx, int rank, const int64_t *shape, const int64_t *v)
{
    return tfl_tensor_new(ctx, TFL_DTYPE_INT64, rank, shape, v);
}

B(b_identity) { return tfl_identity(ctx, x[0]); }
B(b_add) { return tfl_add(ctx, x[0], x[1]); }
B(b_sub) { return tfl_sub(ctx, x[0], x[1]); }
B(b_mul) { return tfl_mul(ctx, x[0], x[1]); }
B(b_div) { return tfl_div(ctx, x[0], x[1]); }
B(b_pow) { return tfl_pow(ctx, x[0], x[1]); }
B(b_maximum) { return tfl_maximum(ctx, x[0], x[1]); }
B(b_minimum) { return tfl_minimum(ctx, x[0], x[1]); }
B(b_neg) { return tfl_neg(ctx, x[0]); }
B(b_exp) { return tfl_exp(ctx, x[0]); }
B(b_log) { return tfl_log(ctx, x[0]); }
B(b_sqrt) { return tfl_sqrt(ctx, x[0]); }
B(b_abs) { return tfl_abs(ctx, x[0]); }
B(b_relu) { return tfl_relu(ctx, x[0]); }
B(b_relu_grad) { return tfl_relu_grad(ctx, x[0], x[1]); }
B(b_leaky_relu) { return tfl_leaky_relu(ctx, x[0], 0.2); }
B(b_sigmoid) { return tfl_sigmoid(ctx, x[0]); }
B(b_tanh) { return tfl_tanh(ctx, x[0]); }
B(b_gelu) { return tfl_gelu(ctx, x[0], false); }
B(b_gelu_tanh) { return tfl_gelu(ctx, x[0], true); }
/* the gradient ops of the activations (SoftplusGrad ...) have no entry point: G(w, a), the
 * vjp of f at a against w, comes from a tape of its own */
typedef tfl_tensor *(*act_fn)(tfl_ctx *ctx, const tfl_tensor *x);
static tfl_tensor *act_vjp(tfl_ctx *ctx, act_fn f, tfl_tensor *a, const tfl_tensor *w)
{
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, a), TFL_OK);
    tfl_tensor *g = NULL;
    assert_int_equal(tfl_tape_vjp(tape, f(ctx, a), w, 1, (const tfl_tensor *const *)&a, &g, 0),
                     TFL_OK);
    tfl_tape_free(tape);
    return g;
}
static tfl_tensor *gelu_erf(tfl_ctx *ctx, const tfl_tensor *x) { return tfl_gelu(ctx, x, false); }
static tfl_tensor *gelu_tanh(tfl_ctx *ctx, const tfl_tensor *x) { return tfl_gelu(ctx, x, true); }
B(b_gelu_grad) { return act_vjp(ctx, gelu_erf, x[0], x[1]); }
B(b_gelu_tanh_grad) { return act_vjp(ctx, gelu_tanh, x[0], x[1]); }
B(b_softplus) { return tfl_softplus(ctx, x[0]); }
B(b_softplus_grad) { return act_vjp(ctx, tfl_softplus, x[0], x[1]); }
B(b_silu) { return tfl_silu(ctx, x[0]); }
B(b_silu_grad) { return act_vjp(ctx, tfl_silu, x[0], x[1]); }
static tfl_tensor *elu_07(tfl_ctx *ctx, const tfl_tensor *x) { return tfl_elu(ctx, x, 0.7); }
B(b_elu) { return elu_07(ctx, x[0]); }
B(b_elu_grad) { return act_vjp(ctx, elu_07, x[0], x[1]); }
B(b_hard_sigmoid) { return tfl_hard_sigmoid(ctx, x[0]); }
B(b_hard_sigmoid_grad) { return act_vjp(ctx, tfl_hard_sigmoid, x[0], x[1]); }
B(b_softmax) { return tfl_softmax(ctx, x[0], -1); }
B(b_softmax0) { return tfl_softmax(ctx, x[0], 0); }
/* attention's softmax: scaled, causal (rows past the last key keep every key) or not */
B(b_attn_softmax_causal) { return tfl_attention_softmax(ctx, x[0], 0.7, true); }
B(b_attn_softmax) { return tfl_attention_softmax(ctx, x[0], -1.3, false); }
/* SoftmaxGrad, the gradient op of both softmaxes: their vjp at x[0] against x[1] */
static tfl_tensor *softmax0(tfl_ctx *ctx, const tfl_tensor *x) { return tfl_softmax(ctx, x, 0); }
static tfl_tensor *attn_causal(tfl_ctx *ctx, const tfl_tensor *x)
{
    return tfl_attention_softmax(ctx, x, 0.7, true);
}
B(b_softmax_grad_causal) { return act_vjp(ctx, attn_causal, x[0], x[1]); }
B(b_softmax_grad_axis0) { return act_vjp(ctx, softmax0, x[0], x[1]); }
B(b_log_softmax) { return tfl_log_softmax(ctx, x[0], -1); }
B(b_log_softmax0) { return tfl_log_softmax(ctx, x[0], 0); }
B(b_sum1) { return tfl_reduce_sum(ctx, x[0], 1, (int[]){1}, false); }
B(b_sum_keep) { return tfl_reduce_sum(ctx, x[0], 2, (int[]){0, 2}, true); }
B(b_sum_all) { return tfl_reduce_sum(ctx, x[0], 0, NULL, false); }
B(b_mean1) { return tfl_reduce_mean(ctx, x[0], 1, (int[]){-1}, false); }
B(b_mean_all) { return tfl_reduce_mean(ctx, x[0], 0, NULL, true); }
B(b_max0) { return tfl_reduce_max(ctx, x[0], 1, (int[]){0}, false); }
B(b_max_all) { return tfl_reduce_max(ctx, x[0], 0, NULL, false); }
B(b_min1) { return tfl_reduce_min(ctx, x[0], 1, (int[]){1}, true); }
B(b_matmul) { return tfl_matmul(ctx, x[0], x[1], 0); }
B(b_matmul_ta) { return tfl_matmul(ctx, x[0], x[1], TFL_TRANSPOSE_A); }
B(b_matmul_tb) { return tfl_matmul(ctx, x[0], x[1], TFL_TRANSPOSE_B); }
B(b_matmul_tab) { return tfl_matmul(ctx, x[0], x[1], TFL_TRANSPOSE_A | TFL_TRANSPOSE_B); }
B(b_matmul_bias) { return tfl_matmul_bias(ctx, x[0], x[1], x[2], 0); }
B(b_matmul_bias_ta) { return tfl_matmul_bias(ctx, x[0], x[1], x[2], TFL_TRANSPOSE_A); }
B(b_matmul_bias_tb) { return tfl_matmul_bias(ctx, x[0], x[1], x[2], TFL_TRANSPOSE_B); }
B(b_reshape) { return tfl_reshape(ctx, x[0], 2, (int64_t[]){3, -1}); }
B(b_reshape_strided) { return tfl_reshape(ctx, tfl_transpose(ctx, x[0], NULL), 1, (int64_t[]){6}); }
B(b_transpose) { return tfl_transpose(ctx, x[0], (int[]){2, 0, 1}); }
B(b_slice) { return tfl_slice(ctx, x[0], (int64_t[]){1, 2}, (int64_t[]){2, -1}); }
B(b_concat) { return tfl_concat(ctx, 3, (const tfl_tensor *const *)x, 1); }
B(b_concat0) { return tfl_concat(ctx, 2, (const tfl_tensor *const *)x, 0); }
B(b_gather0) { return tfl_gather(ctx, x[0], ids(ctx, 1, (int64_t[]){4}, (int64_t[]){4, 0, 4, 2}), 0); }
B(b_gather1)
{
    return tfl_gather(ctx, x[0], ids(ctx, 2, (int64_t[]){2, 2}, (int64_t[]){2, 0, 1, 2}), 1);
}
B(b_cast_c128) { return tfl_cast(ctx, x[0], TFL_DTYPE_COMPLEX128); }
B(b_cast_real) { return tfl_cast(ctx, x[0], TFL_DTYPE_FLOAT64); }
B(b_where)
{
    bool c[6] = {true, false, false, true, true, false};
    tfl_tensor *cond = tfl_tensor_new(ctx, TFL_DTYPE_BOOL, 2, (int64_t[]){2, 3}, c);
    return tfl_where(ctx, cond, x[0], x[1]);
}
B(b_erf) { return tfl_erf(ctx, x[0]); }
B(b_sign) { return tfl_mul(ctx, tfl_sign(ctx, x[0]), x[0]); } /* |x|, through sign's zero gradient */
B(b_conj) { return tfl_conj(ctx, x[0]); }
B(b_broadcast_to) { return tfl_broadcast_to(ctx, x[0], 3, (int64_t[]){2, 3, 4}); }
B(b_pad) { return tfl_pad(ctx, x[0], (int64_t[]){1, 0}, (int64_t[]){2, 1}, 0.5); }
B(b_segment0)
{
    return tfl_unsorted_segment_sum(ctx, x[0], ids(ctx, 1, (int64_t[]){4}, (int64_t[]){0, 2, 0, 1}), 3, 0);
}
B(b_segment1)
{
    return tfl_unsorted_segment_sum(ctx, x[0], ids(ctx, 1, (int64_t[]){4}, (int64_t[]){1, 1, 0, 3}), 5, 1);
}
/* losses: labels as a second differentiable input (dense, sigmoid) or integer constants */
B(b_xent) { return tfl_softmax_cross_entropy(ctx, x[0], x[1], -1); }
B(b_xent0) { return tfl_softmax_cross_entropy(ctx, x[0], x[1], 0); }
B(b_xent_probs) /* labels a softmax of x[1]: each row sums to 1, as real labels do */
{
    return tfl_softmax_cross_entropy(ctx, x[0], tfl_softmax(ctx, x[1], -1), -1);
}
B(b_sparse_xent)
{
    return tfl_sparse_softmax_cross_entropy(ctx, x[0], ids(ctx, 1, (int64_t[]){3}, (int64_t[]){2, 0, 3}));
}
B(b_sparse_xent3)
{
    int32_t v[4] = {1, 0, 2, 2};
    tfl_tensor *labels = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 2, (int64_t[]){2, 2}, v);
    return tfl_sparse_softmax_cross_entropy(ctx, x[0], labels);
}
/* SparseSoftmaxCrossEntropyWithLogitsGrad: the loss's vjp at the logits x[0] against x[1] */
static tfl_tensor *sparse_xent_fixed(tfl_ctx *ctx, const tfl_tensor *x)
{
    return tfl_sparse_softmax_cross_entropy(ctx, x, ids(ctx, 1, (int64_t[]){3}, (int64_t[]){2, 0, 3}));
}
B(b_sparse_xent_grad) { return act_vjp(ctx, sparse_xent_fixed, x[0], x[1]); }
B(b_sigmoid_xent) { return tfl_sigmoid_cross_entropy(ctx, x[0], x[1]); }
/* normalization: all five inputs differentiable, or offset and scale left out (NULL) */
B(b_bn) { return tfl_batch_norm(ctx, x[0], x[1], x[2], x[3], x[4], 1e-3); }
B(b_bn_plain) { return tfl_batch_norm(ctx, x[0], x[1], x[2], NULL, NULL, 0.25); }
B(b_bn_scale_only) { return tfl_batch_norm(ctx, x[0], x[1], x[2], NULL, x[3], 1e-3); }
B(b_bn_training) /* mean and variance from the batch itself (training mode) */
{
    int nax = tfl_tensor_rank(x[0]) - 1, axes[4] = {0, 1, 2, 3};
    tfl_tensor *m = NULL, *v = NULL;
    if (tfl_moments(ctx, x[0], nax, axes, false, &m, &v) != TFL_OK) return NULL;
    return tfl_batch_norm(ctx, x[0], m, v, x[1], x[2], 1e-3);
}
/* the fused training-mode op: gamma and beta or neither; its gradient op is the vjp at x,
 * gamma against x[2]; the moments it gives out are constants for a tape */
B(b_bn_fused) { return tfl_batch_norm_training(ctx, x[0], x[1], x[2], 1e-3, NULL, NULL); }
B(b_bn_fused_plain) { return tfl_batch_norm_training(ctx, x[0], NULL, NULL, 0.05, NULL, NULL); }
B(b_bn_fused_grad)
{
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, x[0]), TFL_OK);
    tfl_tensor *g = NULL;
    tfl_tensor *y = tfl_batch_norm_training(ctx, x[0], x[1], NULL, 1e-3, NULL, NULL);
    assert_int_equal(tfl_tape_vjp(tape, y, x[2], 1, (const tfl_tensor *const *)&x[0], &g, 0),
                     TFL_OK);
    tfl_tape_free(tape);
    return g;
}
B(b_bn_param_grad) /* gamma's and beta's vjps at x, against the cotangent x[3] */
{
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, x[1]), TFL_OK);
    assert_int_equal(tfl_tape_watch(tape, x[2]), TFL_OK);
    tfl_tensor *g[2] = {NULL, NULL};
    tfl_tensor *y = tfl_batch_norm_training(ctx, x[0], x[1], x[2], 1e-3, NULL, NULL);
    assert_int_equal(tfl_tape_vjp(tape, y, x[3], 2, (const tfl_tensor *const *)&x[1], g, 0),
                     TFL_OK);
    tfl_tape_free(tape);
    return tfl_add(ctx, g[0], tfl_mul(ctx, g[1], g[1]));
}
/* layer normalization over the last axis (the LayerNormalization layer's op), with gamma and
 * beta or neither; LayerNormGrad is the vjp of LayerNorm at x, gamma against x[2] */
B(b_layer_norm) { return tfl_layer_norm(ctx, x[0], x[1], x[2], 1e-3); }
B(b_layer_norm_plain) { return tfl_layer_norm(ctx, x[0], NULL, NULL, 0.05); }
B(b_layer_norm_grad)
{
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, x[0]), TFL_OK);
    tfl_tensor *g = NULL;
    assert_int_equal(tfl_tape_vjp(tape, tfl_layer_norm(ctx, x[0], x[1], NULL, 1e-3), x[2], 1,
                                  (const tfl_tensor *const *)&x[0], &g, 0),
                     TFL_OK);
    tfl_tape_free(tape);
    return g;
}
B(b_ln_param_grad) /* gamma's and beta's vjps at x, against the cotangent x[3] */
{
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, x[1]), TFL_OK);
    assert_int_equal(tfl_tape_watch(tape, x[2]), TFL_OK);
    tfl_tensor *g[2] = {NULL, NULL};
    tfl_tensor *y = tfl_layer_norm(ctx, x[0], x[1], x[2], 1e-3);
    assert_int_equal(tfl_tape_vjp(tape, y, x[3], 2, (const tfl_tensor *const *)&x[1], g, 0),
                     TFL_OK);
    tfl_tape_free(tape);
    return tfl_add(ctx, g[0], tfl_mul(ctx, g[1], g[1]));
}
B(b_ln_beta_only) /* beta's vjp alone (gamma not watched) */
{
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, x[2]), TFL_OK);
    tfl_tensor *g = NULL;
    tfl_tensor *y = tfl_layer_norm(ctx, x[0], x[1], x[2], 1e-3);
    assert_int_equal(tfl_tape_vjp(tape, y, x[3], 1, (const tfl_tensor *const *)&x[2], &g, 0),
                     TFL_OK);
    tfl_tape_free(tape);
    return tfl_mul(ctx, g, g);
}
/* dropout with a fixed seed: a fixed mask, so finite differences see a linear map */
B(b_dropout) { return tfl_dropout(ctx, x[0], 0.4, 1234); }
B(b_dropout_rate0) { return tfl_dropout(ctx, x[0], 0.0, 99); }

/* convolutions (NHWC input, HWIO filter) */
static const tfl_conv2d_opts k_conv_strided_same = {{2, 2}, {1, 1}, TFL_PADDING_SAME};
static const tfl_conv2d_opts k_conv_dilated = {{1, 1}, {2, 2}, TFL_PADDING_VALID};
static const tfl_conv2d_opts k_conv_mixed = {{1, 2}, {2, 1}, TFL_PADDING_SAME};
B(b_conv_valid) { return tfl_conv2d(ctx, x[0], x[1], NULL); }
B(b_conv_strided_same) { return tfl_conv2d(ctx, x[0], x[1], &k_conv_strided_same); }
B(b_conv_dilated) { return tfl_conv2d(ctx, x[0], x[1], &k_conv_dilated); }
B(b_conv_mixed) { return tfl_conv2d(ctx, x[0], x[1], &k_conv_mixed); }
B(b_conv_in_strided_same) /* x[0] filter (3, 3, 2, 2), x[1] dy (1, 3, 2, 2) */
{
    return tfl_conv2d_backprop_input(ctx, (int64_t[]){1, 5, 4, 2}, x[0], x[1], &k_conv_strided_same);
}
B(b_conv_in_dilated) /* x[0] filter (2, 2, 1, 2), x[1] dy (1, 3, 3, 2) */
{
    return tfl_conv2d_backprop_input(ctx, (int64_t[]){1, 5, 5, 1}, x[0], x[1], &k_conv_dilated);
}
B(b_conv_filter_strided_same) /* x[0] input (1, 5, 4, 2), x[1] dy (1, 3, 2, 2) */
{
    return tfl_conv2d_backprop_filter(ctx, x[0], (int64_t[]){3, 3, 2, 2}, x[1], &k_conv_strided_same);
}
B(b_conv_filter_dilated) /* x[0] input (2, 5, 5, 1), x[1] dy (2, 3, 3, 2) */
{
    return tfl_conv2d_backprop_filter(ctx, x[0], (int64_t[]){2, 2, 1, 2}, x[1], &k_conv_dilated);
}
/* pooling; the gradient ops have no public entry point: they come from a tape inside */
static const tfl_pool2d_opts k_pool2 = {{2, 2}, {0, 0}, TFL_PADDING_VALID};
static const tfl_pool2d_opts k_pool3_s2_same = {{3, 3}, {2, 2}, TFL_PADDING_SAME};
static const tfl_pool2d_opts k_pool_overlap = {{2, 3}, {1, 2}, TFL_PADDING_VALID};
B(b_max_pool2) { return tfl_max_pool2d(ctx, x[0], &k_pool2); }
B(b_max_pool_same) { return tfl_max_pool2d(ctx, x[0], &k_pool3_s2_same); }
B(b_avg_pool2) { return tfl_avg_pool2d(ctx, x[0], &k_pool2); }
B(b_avg_pool_same) { return tfl_avg_pool2d(ctx, x[0], &k_pool3_s2_same); }
B(b_avg_pool_overlap) { return tfl_avg_pool2d(ctx, x[0], &k_pool_overlap); }
/* d pool(a)/da against w, a vjp on a tape of its own: MaxPoolGrad(a, w) or AvgPoolGrad(w) */
static tfl_tensor *pool_vjp(tfl_ctx *ctx, bool max, tfl_tensor *a, const tfl_tensor *w,
                            const tfl_pool2d_opts *o)
{
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, a), TFL_OK);
    tfl_tensor *y = max ? tfl_max_pool2d(ctx, a, o) : tfl_avg_pool2d(ctx, a, o);
    tfl_tensor *g = NULL;
    assert_int_equal(tfl_tape_vjp(tape, y, w, 1, (const tfl_tensor *const *)&a, &g, 0), TFL_OK);
    tfl_tape_free(tape);
    return g;
}
B(b_max_pool_grad) { return pool_vjp(ctx, true, x[0], x[1], &k_pool_overlap); }
B(b_max_pool_grad_same) { return pool_vjp(ctx, true, x[0], x[1], &k_pool3_s2_same); }
B(b_avg_pool_grad) /* AvgPoolGrad(x[0]) for a (1, 5, 5, 2) input */
{
    tfl_tensor *a = tfl_zeros(ctx, DT(x[0]), 4, (int64_t[]){1, 5, 5, 2});
    return pool_vjp(ctx, false, a, x[0], &k_pool3_s2_same);
}
/* MaxPoolGradGrad(x[0], x[1]): the vjp of MaxPoolGrad(x[0], v) with respect to v against x[1] */
static tfl_tensor *max_pool_grad_grad(tfl_ctx *ctx, tfl_tensor *const *x, const tfl_pool2d_opts *o,
                                      int rank, const int64_t *pooled)
{
    tfl_tensor *v = tfl_zeros(ctx, DT(x[0]), rank, pooled);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, v), TFL_OK);
    tfl_tensor *dx = pool_vjp(ctx, true, x[0], v, o), *g = NULL;
    assert_int_equal(tfl_tape_vjp(tape, dx, x[1], 1, (const tfl_tensor *const *)&v, &g, 0), TFL_OK);
    tfl_tape_free(tape);
    return g;
}
B(b_max_pool_grad_grad) { return max_pool_grad_grad(ctx, x, &k_pool_overlap, 4, (int64_t[]){1, 3, 2, 2}); }
B(b_max_pool_grad_grad_same)
{
    return max_pool_grad_grad(ctx, x, &k_pool3_s2_same, 4, (int64_t[]){1, 3, 3, 2});
}

/* non-differentiable ops, fed from x */
B(b_equal) { return tfl_equal(ctx, x[0], x[0]); }
B(b_not_equal) { return tfl_not_equal(ctx, x[0], cst(ctx, x[0], 0)); }
B(b_less) { return tfl_less(ctx, x[0], cst(ctx, x[0], 0)); }
B(b_less_equal) { return tfl_less_equal(ctx, x[0], cst(ctx, x[0], 0)); }
B(b_greater) { return tfl_greater(ctx, x[0], cst(ctx, x[0], 0)); }
B(b_greater_equal) { return tfl_greater_equal(ctx, x[0], cst(ctx, x[0], 0)); }
B(b_logical_and) { return tfl_logical_and(ctx, tfl_greater(ctx, x[0], cst(ctx, x[0], 0)), tfl_less(ctx, x[0], cst(ctx, x[0], 1))); }
B(b_logical_or) { return tfl_logical_or(ctx, tfl_greater(ctx, x[0], cst(ctx, x[0], 0)), tfl_less(ctx, x[0], cst(ctx, x[0], -1))); }
B(b_logical_not) { return tfl_logical_not(ctx, tfl_greater(ctx, x[0], cst(ctx, x[0], 0))); }
B(b_argmax) { return tfl_argmax(ctx, x[0], 1); }
B(b_argmin) { return tfl_argmin(ctx, x[0], 0); }
B(b_one_hot) { return tfl_one_hot(ctx, tfl_argmax(ctx, x[0], 1), 4, 1, 0, TFL_DTYPE_FLOAT64); }
B(b_batch_moments) /* the batch's variance, a constant */
{
    tfl_tensor *v = NULL;
    return tfl_batch_norm_training(ctx, x[0], NULL, NULL, 1e-3, NULL, &v) ? v : NULL;
}
B(b_stop_gradient) { return tfl_mul(ctx, tfl_stop_gradient(ctx, x[0]), cst(ctx, x[0], 3)); }

/* ---- the cases ------------------------------------------------------------------------------------ */

#define BOTH (GC_F64 | GC_C128)
#define C1(op, label, fn, s0, d0, dt) {op, label, fn, 1, {s0}, {d0}, dt, false}
#define C2(op, label, fn, s0, s1, d0, d1, dt) {op, label, fn, 2, {s0, s1}, {d0, d1}, dt, false}
#define NODIFF(op, fn) {op, "blocks", fn, 1, {SH(3, 4)}, {AWAY0}, GC_F64, true}

static const gc_case cases[] = {
    C1("Identity", "matrix", b_identity, SH(3, 4), ANY, BOTH),
    C2("Add", "same", b_add, SH(2, 3), SH(2, 3), ANY, ANY, BOTH),
    C2("Add", "row", b_add, SH(2, 3), SH(3), ANY, ANY, BOTH),
    C2("Add", "both_broadcast", b_add, SH(2, 1, 3), SH(4, 1), ANY, ANY, BOTH),
    C2("Add", "scalar", b_add, SH0, SH(2, 2), ANY, ANY, GC_F64),
    C2("Sub", "row", b_sub, SH(2, 3), SH(3), ANY, ANY, BOTH),
    C2("Sub", "outer", b_sub, SH(4, 1), SH(1, 3), ANY, ANY, GC_F64),
    C2("Mul", "same", b_mul, SH(2, 3), SH(2, 3), ANY, ANY, BOTH),
    C2("Mul", "both_broadcast", b_mul, SH(2, 1, 3), SH(4, 1), ANY, ANY, BOTH),
    C2("Div", "same", b_div, SH(2, 3), SH(2, 3), ANY, AWAY0, BOTH),
    C2("Div", "column", b_div, SH(2, 3), SH(2, 1), ANY, AWAY0, GC_F64),
    C2("Pow", "same", b_pow, SH(2, 3), SH(2, 3), POS, ANY, BOTH),
    C2("Pow", "row", b_pow, SH(2, 3), SH(3), POS, ANY, GC_F64),
    C2("Maximum", "row", b_maximum, SH(2, 3), SH(3), ANY, ANY, GC_F64),
    C2("Minimum", "same", b_minimum, SH(3, 2), SH(3, 2), ANY, ANY, GC_F64),
    C1("Neg", "matrix", b_neg, SH(2, 3), ANY, BOTH),
    C1("Exp", "matrix", b_exp, SH(2, 3), ANY, BOTH),
    C1("Log", "positive", b_log, SH(2, 3), POS, BOTH),
    C1("Sqrt", "positive", b_sqrt, SH(2, 3), POS, BOTH),
    C1("Abs", "away_from_zero", b_abs, SH(2, 3), AWAY0, BOTH),
    C1("Relu", "away_from_zero", b_relu, SH(2, 3), AWAY0, GC_F64),
    C2("ReluGrad", "same", b_relu_grad, SH(2, 3), SH(2, 3), ANY, AWAY0, GC_F64),
    C2("ReluGrad", "broadcast_dy", b_relu_grad, SH(3), SH(2, 3), ANY, AWAY0, GC_F64),
    C1("LeakyRelu", "away_from_zero", b_leaky_relu, SH(2, 3), AWAY0, GC_F64),
    C1("Sigmoid", "matrix", b_sigmoid, SH(2, 3), ANY, GC_F64),
    C1("Tanh", "matrix", b_tanh, SH(2, 3), ANY, GC_F64),
    C1("Gelu", "erf", b_gelu, SH(2, 3), ANY, GC_F64),
    C1("Gelu", "tanh", b_gelu_tanh, SH(2, 3), ANY, GC_F64),
    C2("GeluGrad", "erf", b_gelu_grad, SH(2, 3), SH(2, 3), ANY, ANY, GC_F64),
    C2("GeluGrad", "tanh", b_gelu_tanh_grad, SH(2, 3), SH(2, 3), ANY, ANY, GC_F64),
    C1("Softplus", "matrix", b_softplus, SH(2, 3), ANY, GC_F64),
    C2("SoftplusGrad", "same", b_softplus_grad, SH(2, 3), SH(2, 3), ANY, ANY, GC_F64),
    C1("Silu", "matrix", b_silu, SH(2, 3), ANY, GC_F64),
    C2("SiluGrad", "same", b_silu_grad, SH(2, 3), SH(2, 3), ANY, ANY, GC_F64),
    C1("Elu", "away_from_zero", b_elu, SH(2, 3), AWAY0, GC_F64),
    C2("EluGrad", "away_from_zero", b_elu_grad, SH(2, 3), SH(2, 3), AWAY0, ANY, GC_F64),
    C1("HardSigmoid", "matrix", b_hard_sigmoid, SH(2, 3), ANY, GC_F64),
    C2("HardSigmoidGrad", "same", b_hard_sigmoid_grad, SH(2, 3), SH(2, 3), ANY, ANY, GC_F64),
    C1("Softmax", "last_axis", b_softmax, SH(3, 4), ANY, GC_F64),
    C1("Softmax", "axis0", b_softmax0, SH(3, 4), ANY, GC_F64),
    C1("AttentionSoftmax", "causal_rank3", b_attn_softmax_causal, SH(2, 3, 3), ANY, GC_F64),
    C1("AttentionSoftmax", "causal_more_queries", b_attn_softmax_causal, SH(5, 3), ANY, GC_F64),
    C1("AttentionSoftmax", "causal_more_keys", b_attn_softmax_causal, SH(1, 3, 5), ANY, GC_F64),
    C1("AttentionSoftmax", "negative_scale", b_attn_softmax, SH(2, 2, 4), ANY, GC_F64),
    C2("SoftmaxGrad", "causal", b_softmax_grad_causal, SH(2, 3, 4), SH(2, 3, 4), ANY, ANY, GC_F64),
    C2("SoftmaxGrad", "axis0", b_softmax_grad_axis0, SH(3, 4), SH(3, 4), ANY, ANY, GC_F64),
    C1("LogSoftmax", "last_axis", b_log_softmax, SH(3, 4), ANY, GC_F64),
    C1("LogSoftmax", "axis0", b_log_softmax0, SH(3, 4), ANY, GC_F64),
    C1("Sum", "axis1", b_sum1, SH(2, 3, 2), ANY, BOTH),
    C1("Sum", "keepdims", b_sum_keep, SH(2, 3, 2), ANY, GC_F64),
    C1("Sum", "all", b_sum_all, SH(3, 4), ANY, BOTH),
    C1("Mean", "last_axis", b_mean1, SH(3, 4), ANY, BOTH),
    C1("Mean", "all_keepdims", b_mean_all, SH(3, 4), ANY, GC_F64),
    C1("Max", "axis0", b_max0, SH(3, 4), ANY, GC_F64),
    C1("Max", "all", b_max_all, SH(3, 4), ANY, GC_F64),
    C1("Min", "axis1_keepdims", b_min1, SH(3, 4), ANY, GC_F64),
    C2("MatMul", "plain", b_matmul, SH(3, 4), SH(4, 2), ANY, ANY, BOTH),
    C2("MatMul", "transpose_a", b_matmul_ta, SH(4, 3), SH(4, 2), ANY, ANY, BOTH),
    C2("MatMul", "transpose_b", b_matmul_tb, SH(3, 4), SH(2, 4), ANY, ANY, BOTH),
    C2("MatMul", "transpose_ab", b_matmul_tab, SH(4, 3), SH(2, 4), ANY, ANY, BOTH),
    C2("MatMul", "batched", b_matmul, SH(2, 3, 4), SH(2, 4, 2), ANY, ANY, GC_F64),
    C2("MatMul", "broadcast_batch", b_matmul, SH(2, 3, 4), SH(4, 2), ANY, ANY, GC_F64),
    {"FusedMatMul", "plain", b_matmul_bias, 3, {SH(3, 4), SH(4, 2), SH(2)}, {ANY, ANY, ANY},
     GC_F64, false},
    {"FusedMatMul", "transpose_a", b_matmul_bias_ta, 3, {SH(4, 3), SH(4, 2), SH(2)},
     {ANY, ANY, ANY}, GC_F64, false},
    {"FusedMatMul", "transpose_b_batched", b_matmul_bias_tb, 3, {SH(2, 3, 4), SH(2, 5, 4), SH(5)},
     {ANY, ANY, ANY}, GC_F64, false},
    {"FusedMatMul", "broadcast_batch", b_matmul_bias, 3, {SH(2, 3, 4), SH(4, 2), SH(2)},
     {ANY, ANY, ANY}, GC_F64, false},
    C2("MatMul", "broadcast_batch_b", b_matmul_tb, SH(1, 3, 4), SH(2, 2, 4), ANY, ANY, GC_F64),
    C1("Reshape", "view", b_reshape, SH(2, 6), ANY, BOTH),
    C1("Reshape", "strided_copy", b_reshape_strided, SH(2, 3), ANY, GC_F64),
    C1("Transpose", "rank3", b_transpose, SH(2, 3, 4), ANY, BOTH),
    C1("Slice", "block", b_slice, SH(4, 5), ANY, BOTH),
    {"ConcatV2", "three_axis1", b_concat, 3, {SH(2, 1), SH(2, 3), SH(2, 2)}, {ANY, ANY, ANY}, BOTH, false},
    C2("ConcatV2", "axis0", b_concat0, SH(1, 3), SH(2, 3), ANY, ANY, GC_F64),
    C1("GatherV2", "axis0_repeated", b_gather0, SH(5, 3), ANY, BOTH),
    C1("GatherV2", "axis1_matrix_indices", b_gather1, SH(2, 3, 2), ANY, GC_F64),
    C1("Cast", "to_complex", b_cast_c128, SH(2, 3), ANY, GC_F64),
    C1("Cast", "to_real", b_cast_real, SH(2, 3), ANY, GC_C128),
    C2("SelectV2", "broadcast", b_where, SH(2, 3), SH(3), ANY, ANY, BOTH),
    C1("Erf", "matrix", b_erf, SH(2, 3), ANY, GC_F64),
    C1("Sign", "times_x", b_sign, SH(2, 3), AWAY0, BOTH),
    C1("Conj", "matrix", b_conj, SH(2, 3), ANY, GC_C128),
    C1("BroadcastTo", "rank3", b_broadcast_to, SH(3, 1), ANY, BOTH),
    C1("PadV2", "matrix", b_pad, SH(2, 3), ANY, BOTH),
    C1("UnsortedSegmentSum", "axis0", b_segment0, SH(4, 3), ANY, BOTH),
    C1("UnsortedSegmentSum", "axis1", b_segment1, SH(2, 4), ANY, GC_F64),
    C2("SoftmaxCrossEntropyWithLogits", "last_axis", b_xent, SH(3, 4), SH(3, 4), ANY, POS, GC_F64),
    C2("SoftmaxCrossEntropyWithLogits", "axis0", b_xent0, SH(3, 2, 2), SH(3, 2, 2), ANY, ANY, GC_F64),
    C2("SoftmaxCrossEntropyWithLogits", "probabilities", b_xent_probs, SH(2, 5), SH(2, 5), ANY, ANY,
       GC_F64),
    C1("SparseSoftmaxCrossEntropyWithLogits", "int64_labels", b_sparse_xent, SH(3, 4), ANY, GC_F64),
    C2("SparseSoftmaxCrossEntropyWithLogitsGrad", "int64_labels", b_sparse_xent_grad, SH(3, 4),
       SH(3), ANY, ANY, GC_F64),
    C1("SparseSoftmaxCrossEntropyWithLogits", "rank3_int32_labels", b_sparse_xent3, SH(2, 2, 3), ANY,
       GC_F64),
    C2("SigmoidCrossEntropyWithLogits", "same", b_sigmoid_xent, SH(2, 3), SH(2, 3), ANY, POS, GC_F64),
    C2("SigmoidCrossEntropyWithLogits", "broadcast", b_sigmoid_xent, SH(2, 3), SH(3), ANY, ANY,
       GC_F64),
    {"BatchNorm", "rank2", b_bn, 5, {SH(4, 3), SH(3), SH(3), SH(3), SH(3)},
     {ANY, ANY, POS, ANY, ANY}, GC_F64, false},
    {"BatchNorm", "rank4", b_bn, 5, {SH(2, 2, 2, 3), SH(3), SH(3), SH(3), SH(3)},
     {ANY, ANY, POS, ANY, ANY}, GC_F64, false},
    {"BatchNorm", "rank1", b_bn, 5, {SH(4), SH(4), SH(4), SH(4), SH(4)},
     {ANY, ANY, POS, ANY, ANY}, GC_F64, false},
    {"BatchNorm", "no_offset_scale_rank2", b_bn_plain, 3, {SH(5, 2), SH(2), SH(2)},
     {ANY, ANY, POS}, GC_F64, false},
    {"BatchNorm", "no_offset_scale_rank4", b_bn_plain, 3, {SH(2, 3, 1, 2), SH(2), SH(2)},
     {ANY, ANY, POS}, GC_F64, false},
    {"BatchNorm", "scale_only", b_bn_scale_only, 4, {SH(3, 2), SH(2), SH(2), SH(2)},
     {ANY, ANY, POS, ANY}, GC_F64, false},
    {"BatchNorm", "training_rank2", b_bn_training, 3, {SH(5, 3), SH(3), SH(3)}, {ANY, ANY, ANY},
     GC_F64, false},
    {"BatchNorm", "training_rank4", b_bn_training, 3, {SH(2, 2, 3, 2), SH(2), SH(2)},
     {ANY, ANY, ANY}, GC_F64, false},
    {"BatchNormTraining", "rank2", b_bn_fused, 3, {SH(5, 3), SH(3), SH(3)}, {ANY, ANY, ANY},
     GC_F64, false},
    {"BatchNormTraining", "rank4", b_bn_fused, 3, {SH(2, 2, 3, 2), SH(2), SH(2)},
     {ANY, ANY, ANY}, GC_F64, false},
    C1("BatchNormTraining", "no_gamma_beta_rank3", b_bn_fused_plain, SH(3, 2, 4), ANY, GC_F64),
    {"BatchNormTrainingGrad", "rank2", b_bn_fused_grad, 3, {SH(4, 3), SH(3), SH(4, 3)},
     {ANY, ANY, ANY}, GC_F64, false},
    {"BatchNormTrainingGrad", "rank4", b_bn_fused_grad, 3, {SH(2, 2, 2, 3), SH(3), SH(2, 2, 2, 3)},
     {ANY, ANY, ANY}, GC_F64, false},
    {"BatchNormParamGrad", "rank2", b_bn_param_grad, 4, {SH(5, 3), SH(3), SH(3), SH(5, 3)},
     {ANY, ANY, ANY, ANY}, GC_F64, false},
    {"BatchNormParamGrad", "rank4", b_bn_param_grad, 4,
     {SH(2, 2, 2, 2), SH(2), SH(2), SH(2, 2, 2, 2)}, {ANY, ANY, ANY, ANY}, GC_F64, false},
    {"LayerNorm", "rank2", b_layer_norm, 3, {SH(4, 5), SH(5), SH(5)}, {ANY, ANY, ANY}, GC_F64,
     false},
    {"LayerNorm", "rank3", b_layer_norm, 3, {SH(2, 3, 4), SH(4), SH(4)}, {ANY, ANY, ANY}, GC_F64,
     false},
    C1("LayerNorm", "no_gamma_beta_rank2", b_layer_norm_plain, SH(3, 4), ANY, GC_F64),
    C1("LayerNorm", "no_gamma_beta_rank1", b_layer_norm_plain, SH(6), ANY, GC_F64),
    {"LayerNormGrad", "rank2", b_layer_norm_grad, 3, {SH(3, 4), SH(4), SH(3, 4)},
     {ANY, ANY, ANY}, GC_F64, false},
    {"LayerNormGrad", "rank3", b_layer_norm_grad, 3, {SH(2, 2, 5), SH(5), SH(2, 2, 5)},
     {ANY, ANY, ANY}, GC_F64, false},
    {"LayerNormParamGrad", "rank2", b_ln_param_grad, 4, {SH(5, 3), SH(3), SH(3), SH(5, 3)},
     {ANY, ANY, ANY, ANY}, GC_F64, false},
    {"LayerNormParamGrad", "rank3", b_ln_param_grad, 4, {SH(2, 3, 4), SH(4), SH(4), SH(2, 3, 4)},
     {ANY, ANY, ANY, ANY}, GC_F64, false},
    {"LayerNormParamGrad", "beta_only", b_ln_beta_only, 4, {SH(3, 4), SH(4), SH(4), SH(3, 4)},
     {ANY, ANY, ANY, ANY}, GC_F64, false},
    C1("Dropout", "fixed_seed", b_dropout, SH(5, 7), ANY, GC_F64),
    C1("Dropout", "rate0_identity", b_dropout_rate0, SH(2, 3), ANY, GC_F64),
    C2("Conv2D", "valid", b_conv_valid, SH(1, 4, 4, 2), SH(2, 2, 2, 3), ANY, ANY, GC_F64),
    C2("Conv2D", "strided_same", b_conv_strided_same, SH(2, 5, 4, 1), SH(3, 3, 1, 2), ANY, ANY,
       GC_F64),
    C2("Conv2D", "dilated", b_conv_dilated, SH(1, 5, 5, 2), SH(2, 2, 2, 2), ANY, ANY, GC_F64),
    C2("Conv2D", "stride_w_dilation_h_same", b_conv_mixed, SH(1, 5, 4, 2), SH(2, 3, 2, 2), ANY,
       ANY, GC_F64),
    C2("Conv2DBackpropInput", "strided_same", b_conv_in_strided_same, SH(3, 3, 2, 2),
       SH(1, 3, 2, 2), ANY, ANY, GC_F64),
    C2("Conv2DBackpropInput", "dilated", b_conv_in_dilated, SH(2, 2, 1, 2), SH(1, 3, 3, 2), ANY,
       ANY, GC_F64),
    C2("Conv2DBackpropFilter", "strided_same", b_conv_filter_strided_same, SH(1, 5, 4, 2),
       SH(1, 3, 2, 2), ANY, ANY, GC_F64),
    C2("Conv2DBackpropFilter", "dilated", b_conv_filter_dilated, SH(2, 5, 5, 1), SH(2, 3, 3, 2),
       ANY, ANY, GC_F64),
    C1("MaxPool", "2x2", b_max_pool2, SH(1, 4, 4, 2), ANY, GC_F64),
    C1("MaxPool", "3x3_stride2_same", b_max_pool_same, SH(1, 5, 5, 2), ANY, GC_F64),
    C2("MaxPoolGrad", "overlapping", b_max_pool_grad, SH(1, 4, 5, 2), SH(1, 3, 2, 2), ANY, ANY,
       GC_F64),
    C2("MaxPoolGrad", "3x3_stride2_same", b_max_pool_grad_same, SH(1, 5, 5, 2), SH(1, 3, 3, 2),
       ANY, ANY, GC_F64),
    C2("MaxPoolGradGrad", "overlapping", b_max_pool_grad_grad, SH(1, 4, 5, 2), SH(1, 4, 5, 2), ANY,
       ANY, GC_F64),
    C2("MaxPoolGradGrad", "3x3_stride2_same", b_max_pool_grad_grad_same, SH(1, 5, 5, 2),
       SH(1, 5, 5, 2), ANY, ANY, GC_F64),
    C1("AvgPool", "2x2", b_avg_pool2, SH(2, 4, 4, 1), ANY, GC_F64),
    C1("AvgPool", "3x3_stride2_same", b_avg_pool_same, SH(1, 5, 5, 2), ANY, GC_F64),
    C1("AvgPool", "overlapping", b_avg_pool_overlap, SH(1, 4, 5, 2), ANY, GC_F64),
    C1("AvgPoolGrad", "3x3_stride2_same", b_avg_pool_grad, SH(1, 3, 3, 2), ANY, GC_F64),
    NODIFF("Equal", b_equal),
    NODIFF("NotEqual", b_not_equal),
    NODIFF("Less", b_less),
    NODIFF("LessEqual", b_less_equal),
    NODIFF("Greater", b_greater),
    NODIFF("GreaterEqual", b_greater_equal),
    NODIFF("LogicalAnd", b_logical_and),
    NODIFF("LogicalOr", b_logical_or),
    NODIFF("LogicalNot", b_logical_not),
    NODIFF("ArgMax", b_argmax),
    NODIFF("ArgMin", b_argmin),
    NODIFF("OneHot", b_one_hot),
    NODIFF("StopGradient", b_stop_gradient),
    NODIFF("BatchMoments", b_batch_moments),
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* ---- tests ------------------------------------------------------------------------------------------ */

static void run_case(void **state)
{
    fixture *f = *state;
    const gc_case *c = f->user;
    if (c->blocks) {
        gc_check_blocks(c, f->ctx);
        return;
    }
    uint64_t seed = 1;
    for (const char *p = c->label; *p; p++) seed = seed * 131 + (unsigned char)*p;
    if (c->dtypes & GC_F64) gc_check_dtype(c, f->ctx, TFL_DTYPE_FLOAT64, seed);
    if (c->dtypes & GC_C128) gc_check_dtype(c, f->ctx, TFL_DTYPE_COMPLEX128, seed + 1);
}

/* Every op of the table has a rule or is marked non-differentiable, and has a case here of
 * the matching kind. */
static void coverage(void **state)
{
    (void)state;
    assert_true(tfl_op_count() > 40);
    for (int op = 0; op < tfl_op_count(); op++) {
        const char *name = tfl_op_name(op);
        tfl_grad_kind kind = tfl_op_gradient_kind(op);
        if (kind == TFL_GRAD_MISSING)
            fail_msg("op %s has no backward rule and is not marked TFL_OPF_NO_GRAD (tape/rules.c)",
                     name);
        bool found = false;
        for (size_t i = 0; i < N_CASES && !found; i++)
            found = strcmp(cases[i].op, name) == 0 &&
                    cases[i].blocks == (kind == TFL_GRAD_NOT_DIFFERENTIABLE);
        if (!found)
            fail_msg("op %s has no %s case in tests/tape/test_gradcheck.c", name,
                     kind == TFL_GRAD_DEFINED ? "gradient-check" : "non-differentiable");
    }
    assert_null(tfl_op_name(-1));
    assert_null(tfl_op_name(tfl_op_count()));
    assert_int_equal(tfl_op_gradient_kind(tfl_op_count()), TFL_GRAD_MISSING);
}

static int setup_case(void **state)
{
    const gc_case *c = *state;
    if (setup(state) != 0) return -1;
    ((fixture *)*state)->user = c;
    return 0;
}

int main(void)
{
    static struct CMUnitTest tests[N_CASES + 1];
    static char names[N_CASES][64];
    tests[0] = (struct CMUnitTest)cmocka_unit_test(coverage);
    for (size_t i = 0; i < N_CASES; i++) {
        snprintf(names[i], sizeof names[i], "%s/%s", cases[i].op, cases[i].label);
        tests[i + 1] = (struct CMUnitTest){names[i], run_case, setup_case, teardown,
                                           (void *)&cases[i]};
    }
    return _cmocka_run_group_tests("gradcheck", tests, N_CASES + 1, NULL, NULL);
}
