/*
 * tests/backend/backend_cases.c: one or more cases per op of tfl_op_name, with broadcasting,
 * strided (transposed) views, several dtypes, and the gradient ops reached through the
 * backward pass (ReluGrad also directly). See backend_cases.h.
 */
#include "backend_cases.h"

#define F32 TFL_DTYPE_FLOAT32
#define F64 TFL_DTYPE_FLOAT64
#define F16 TFL_DTYPE_FLOAT16
#define BF16 TFL_DTYPE_BFLOAT16
#define I32 TFL_DTYPE_INT32
#define I64 TFL_DTYPE_INT64
#define BOOL TFL_DTYPE_BOOL
#define C64 TFL_DTYPE_COMPLEX64

/* an input: dtype, rank, shape */
#define IN(dt, r, ...)                                                                             \
    {                                                                                              \
        dt, r, {__VA_ARGS__}, BC_UNIFORM, 0, 0                                                     \
    }
#define INP(dt, r, ...)                                                                            \
    {                                                                                              \
        dt, r, {__VA_ARGS__}, BC_POS, 0, 0                                                         \
    }
#define INV(dt, r, ...)                                                                            \
    {                                                                                              \
        dt, r, {__VA_ARGS__}, BC_UNIFORM, 0, 1                                                     \
    }
#define IDX(dt, hi, r, ...)                                                                        \
    {                                                                                              \
        dt, r, {__VA_ARGS__}, BC_INDEX, hi, 0                                                      \
    }
#define INB(r, ...)                                                                                \
    {                                                                                              \
        BOOL, r, {__VA_ARGS__}, BC_BOOL, 0, 0                                                      \
    }
#define PROB(dt, r, ...)                                                                           \
    {                                                                                              \
        dt, r, {__VA_ARGS__}, BC_PROB, 0, 0                                                        \
    }

#define BIN(fn)                                                                                    \
    static tfl_tensor *b_##fn(tfl_ctx *c, tfl_tensor *const *in)                                   \
    {                                                                                              \
        return tfl_##fn(c, in[0], in[1]);                                                          \
    }
#define UN(fn)                                                                                     \
    static tfl_tensor *b_##fn(tfl_ctx *c, tfl_tensor *const *in)                                   \
    {                                                                                              \
        return tfl_##fn(c, in[0]);                                                                 \
    }
BIN(add)
BIN(sub) BIN(mul) BIN(div) BIN(pow) BIN(maximum) BIN(minimum) BIN(equal) BIN(not_equal) BIN(less)
    BIN(less_equal) BIN(greater) BIN(greater_equal) BIN(logical_and) BIN(logical_or) BIN(relu_grad)
        BIN(sigmoid_cross_entropy) UN(neg) UN(exp) UN(log) UN(sqrt) UN(abs) UN(relu) UN(sigmoid)
            UN(tanh) UN(softplus) UN(silu) UN(hard_sigmoid) UN(erf) UN(sign) UN(conj) UN(identity) UN(logical_not) UN(stop_gradient)

                static tfl_tensor *b_softmax_cross_entropy_last(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_softmax_cross_entropy(c, in[0], in[1], -1);
}

static tfl_tensor *b_leaky(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_leaky_relu(c, in[0], 0.2);
}
static tfl_tensor *b_elu(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_elu(c, in[0], 0.5);
}
static tfl_tensor *b_gelu(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_gelu(c, in[0], false);
}
static tfl_tensor *b_gelu_tanh(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_gelu(c, in[0], true);
}
static tfl_tensor *b_softmax(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_softmax(c, in[0], -1);
}
static tfl_tensor *b_softmax0(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_softmax(c, in[0], 0);
}
/* attention's softmax (its gradient, SoftmaxGrad, in the harness's backward, as Softmax's) */
static tfl_tensor *b_attn_causal(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_attention_softmax(c, in[0], 0.35, true);
}
static tfl_tensor *b_attn_plain(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_attention_softmax(c, in[0], 1.5, false);
}
static tfl_tensor *b_log_softmax(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_log_softmax(c, in[0], 1);
}
/* over the last axis: the GPU's cuDNN path (framework/cuda/cudnn_norm.c) */
static tfl_tensor *b_log_softmax_last(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_log_softmax(c, in[0], -1);
}
static tfl_tensor *b_sum02(tfl_ctx *c, tfl_tensor *const *in)
{
    const int axes[2] = {0, 2};
    return tfl_reduce_sum(c, in[0], 2, axes, false);
}
static tfl_tensor *b_sum_all(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_reduce_sum(c, in[0], 0, NULL, false);
}
static tfl_tensor *b_mean1(tfl_ctx *c, tfl_tensor *const *in)
{
    const int axes[1] = {1};
    return tfl_reduce_mean(c, in[0], 1, axes, true);
}
static tfl_tensor *b_max1(tfl_ctx *c, tfl_tensor *const *in)
{
    const int axes[1] = {-1};
    return tfl_reduce_max(c, in[0], 1, axes, false);
}
static tfl_tensor *b_min0(tfl_ctx *c, tfl_tensor *const *in)
{
    const int axes[1] = {0};
    return tfl_reduce_min(c, in[0], 1, axes, false);
}
static tfl_tensor *b_argmax(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_argmax(c, in[0], 1);
}
static tfl_tensor *b_argmin(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_argmin(c, in[0], 0);
}
static tfl_tensor *b_matmul(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_matmul(c, in[0], in[1], 0);
}
static tfl_tensor *b_matmul_tt(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_matmul(c, in[0], in[1], TFL_TRANSPOSE_A | TFL_TRANSPOSE_B);
}
static tfl_tensor *b_matmul_tb(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_matmul(c, in[0], in[1], TFL_TRANSPOSE_B);
}
static tfl_tensor *b_matmul_bias(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_matmul_bias(c, in[0], in[1], in[2], 0);
}
static tfl_tensor *b_matmul_bias_tab(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_matmul_bias(c, in[0], in[1], in[2], TFL_TRANSPOSE_A | TFL_TRANSPOSE_B);
}
static tfl_tensor *b_reshape(tfl_ctx *c, tfl_tensor *const *in)
{
    const int64_t s[2] = {4, 6};
    return tfl_reshape(c, in[0], 2, s);
}
static tfl_tensor *b_transpose(tfl_ctx *c, tfl_tensor *const *in)
{
    const int perm[3] = {2, 0, 1};
    return tfl_mul(c, tfl_transpose(c, in[0], perm), tfl_transpose(c, in[0], perm));
}
static tfl_tensor *b_slice(tfl_ctx *c, tfl_tensor *const *in)
{
    const int64_t b[2] = {1, 2}, s[2] = {2, 3};
    return tfl_exp(c, tfl_slice(c, in[0], b, s));
}
static tfl_tensor *b_concat(tfl_ctx *c, tfl_tensor *const *in)
{
    const tfl_tensor *xs[3] = {in[0], in[1], in[2]};
    return tfl_concat(c, 3, xs, 1);
}
static tfl_tensor *b_gather(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_gather(c, in[0], in[1], 1);
}
static tfl_tensor *b_gather0(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_gather(c, in[0], in[1], 0);
}
static tfl_tensor *b_one_hot(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_one_hot(c, in[0], 5, 2.5, -1.0, F32);
}
static tfl_tensor *b_cast_f64(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_cast(c, in[0], F64);
}
static tfl_tensor *b_cast_f16(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_cast(c, in[0], F16);
}
static tfl_tensor *b_cast_i32(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_cast(c, tfl_mul(c, in[0], tfl_scalar_f32(c, 3.0f)), I32);
}
static tfl_tensor *b_cast_bool_f32(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_cast(c, in[0], F32);
}
static tfl_tensor *b_where(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_where(c, in[0], in[1], in[2]);
}
static tfl_tensor *b_broadcast_to(tfl_ctx *c, tfl_tensor *const *in)
{
    const int64_t s[3] = {2, 3, 4};
    return tfl_broadcast_to(c, in[0], 3, s);
}
static tfl_tensor *b_pad(tfl_ctx *c, tfl_tensor *const *in)
{
    const int64_t before[2] = {1, 0}, after[2] = {0, 2};
    return tfl_pad(c, in[0], before, after, 0.5);
}
static tfl_tensor *b_segment_sum(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_unsorted_segment_sum(c, in[0], in[1], 4, 0);
}
static tfl_tensor *b_sparse_xent(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_sparse_softmax_cross_entropy(c, in[0], in[1]);
}
static tfl_tensor *b_batch_norm(tfl_ctx *c, tfl_tensor *const *in)
{
    /* mean and variance from the batch (tfl_moments), as the layer in training mode */
    tfl_tensor *mean = NULL, *var = NULL;
    const int axes[1] = {0};
    if (tfl_moments(c, in[0], 1, axes, false, &mean, &var) != TFL_OK) return NULL;
    return tfl_batch_norm(c, in[0], mean, var, in[1], in[2], 1e-3);
}
/* NHWC, training: the batch's moments over N, H, W (cuDNN's spatial mode on the GPU) */
static tfl_tensor *b_batch_norm_nhwc(tfl_ctx *c, tfl_tensor *const *in)
{
    tfl_tensor *mean = NULL, *var = NULL;
    const int axes[3] = {0, 1, 2};
    if (tfl_moments(c, in[0], 3, axes, false, &mean, &var) != TFL_OK) return NULL;
    return tfl_batch_norm(c, in[0], mean, var, in[1], in[2], 1e-3);
}
/* the fused training-mode op (its gradient op in the harness's backward); the batch's
 * statistics it gives out, mean + variance (BatchMoments, no gradient) */
static tfl_tensor *b_batch_norm_training(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_batch_norm_training(c, in[0], in[1], in[2], 1e-3, NULL, NULL);
}
static tfl_tensor *b_batch_norm_training_plain(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_batch_norm_training(c, in[0], NULL, NULL, 1e-5, NULL, NULL);
}
static tfl_tensor *b_batch_moments(tfl_ctx *c, tfl_tensor *const *in)
{
    tfl_tensor *mean = NULL, *var = NULL;
    if (!tfl_batch_norm_training(c, in[0], NULL, NULL, 1e-3, &mean, &var)) return NULL;
    return tfl_add(c, mean, var);
}
/* inference: given (moving) statistics x, mean, variance, scale; no offset (zeros) */
static tfl_tensor *b_batch_norm_inference(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_batch_norm(c, in[0], in[1], in[2], NULL, in[3], 1e-5);
}
/* LayerNorm over the last axis (its gradient, LayerNormGrad, in the harness's backward) */
static tfl_tensor *b_layer_norm(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_layer_norm(c, in[0], in[1], in[2], 1e-5);
}
static tfl_tensor *b_layer_norm_plain(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_layer_norm(c, in[0], NULL, NULL, 1e-3);
}
static tfl_tensor *b_dropout(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_dropout(c, in[0], 0.3, 1234);
}
static tfl_tensor *b_conv2d(tfl_ctx *c, tfl_tensor *const *in)
{
    const tfl_conv2d_opts o = {{1, 1}, {1, 1}, TFL_PADDING_SAME};
    return tfl_conv2d(c, in[0], in[1], &o);
}
/* the convolution's variants: strides, dilations, padding (SAME with an odd total pads one
 * more after than before, which cuDNN cannot express: the GPU runs im2col there), 1x1 stride 1
 * (no im2col), float64; the gradients run both backprops */
static tfl_tensor *b_conv2d_s2_valid(tfl_ctx *c, tfl_tensor *const *in)
{
    const tfl_conv2d_opts o = {{2, 2}, {1, 1}, TFL_PADDING_VALID};
    return tfl_conv2d(c, in[0], in[1], &o);
}
static tfl_tensor *b_conv2d_s2_same(tfl_ctx *c, tfl_tensor *const *in)
{
    const tfl_conv2d_opts o = {{2, 2}, {1, 1}, TFL_PADDING_SAME};
    return tfl_conv2d(c, in[0], in[1], &o);
}
static tfl_tensor *b_conv2d_dilated(tfl_ctx *c, tfl_tensor *const *in)
{
    const tfl_conv2d_opts o = {{1, 1}, {2, 2}, TFL_PADDING_SAME};
    return tfl_conv2d(c, in[0], in[1], &o);
}
static tfl_tensor *b_conv2d_mixed(tfl_ctx *c, tfl_tensor *const *in)
{
    const tfl_conv2d_opts o = {{1, 2}, {2, 1}, TFL_PADDING_VALID};
    return tfl_conv2d(c, in[0], in[1], &o);
}
static tfl_tensor *b_conv2d_1x1(tfl_ctx *c, tfl_tensor *const *in)
{
    return tfl_conv2d(c, in[0], in[1], NULL);
}
/* the backprops as the case's own op (their gradients: the other backprop and Conv2D) */
static tfl_tensor *b_conv2d_backprop_input(tfl_ctx *c, tfl_tensor *const *in)
{
    const tfl_conv2d_opts o = {{2, 2}, {1, 1}, TFL_PADDING_SAME};
    const int64_t xs[4] = {2, 7, 7, 3};
    return tfl_conv2d_backprop_input(c, xs, in[0], in[1], &o);
}
static tfl_tensor *b_conv2d_backprop_filter(tfl_ctx *c, tfl_tensor *const *in)
{
    const tfl_conv2d_opts o = {{2, 1}, {1, 2}, TFL_PADDING_VALID};
    const int64_t fs[4] = {2, 3, 2, 3};
    return tfl_conv2d_backprop_filter(c, in[0], fs, in[1], &o);
}
static tfl_tensor *b_max_pool(tfl_ctx *c, tfl_tensor *const *in)
{
    const tfl_pool2d_opts o = {{2, 2}, {2, 2}, TFL_PADDING_VALID};
    return tfl_max_pool2d(c, in[0], &o);
}
static tfl_tensor *b_avg_pool(tfl_ctx *c, tfl_tensor *const *in)
{
    const tfl_pool2d_opts o = {{2, 2}, {1, 1}, TFL_PADDING_SAME};
    return tfl_avg_pool2d(c, in[0], &o);
}
/* MaxPoolGradGrad: the gradient of a max pool's gradient (a tape inside the case; the
 * harness's own tape then differentiates MaxPoolGrad) */
static tfl_tensor *max_pool_grad_of(tfl_ctx *c, tfl_tensor *const *in, const tfl_pool2d_opts *o)
{
    tfl_tape *t = tfl_tape_begin(c, 0);
    if (!t) return NULL;
    tfl_tape_watch(t, in[0]);
    tfl_tensor *y = tfl_max_pool2d(c, in[0], o);
    tfl_tensor *z = tfl_reduce_sum(c, tfl_mul(c, y, in[1]), 0, NULL, false);
    tfl_tape_end(t);
    tfl_tensor *g = NULL;
    const tfl_tensor *src[1] = {in[0]};
    tfl_status st = z ? tfl_tape_gradient(t, z, 1, src, &g, 0) : TFL_INTERNAL;
    tfl_tape_free(t);
    return st == TFL_OK ? g : NULL;
}
static tfl_tensor *b_max_pool_grad(tfl_ctx *c, tfl_tensor *const *in)
{
    const tfl_pool2d_opts o = {{2, 2}, {2, 2}, TFL_PADDING_VALID};
    return max_pool_grad_of(c, in, &o);
}
/* the pooling geometries the GPU kernels must get right: strides larger than the window
 * (positions in no window), SAME padding whose windows are clipped at the borders (AvgPool
 * divides by the positions inside), overlapping windows (the gradients add in several
 * windows' order) and, with integer-valued inputs, ties (the first maximum takes it all) */
#define POOL_CASE(name, fn, kh, kw, sh, sw, pad)                                                   \
    static tfl_tensor *name(tfl_ctx *c, tfl_tensor *const *in)                                     \
    {                                                                                              \
        const tfl_pool2d_opts o = {{kh, kw}, {sh, sw}, TFL_PADDING_##pad};                         \
        return fn(c, in[0], &o);                                                                   \
    }
POOL_CASE(b_max_pool_s3, tfl_max_pool2d, 2, 2, 3, 3, VALID)
POOL_CASE(b_avg_pool_s3, tfl_avg_pool2d, 2, 2, 3, 3, VALID)
POOL_CASE(b_max_pool_same3, tfl_max_pool2d, 3, 3, 2, 2, SAME)
POOL_CASE(b_avg_pool_same3, tfl_avg_pool2d, 3, 3, 2, 2, SAME)
POOL_CASE(b_max_pool_same_k4s1, tfl_max_pool2d, 4, 3, 1, 2, SAME)
POOL_CASE(b_avg_pool_same_k4s1, tfl_avg_pool2d, 4, 3, 1, 2, SAME)
#undef POOL_CASE
/* MaxPoolGradGrad through overlapping, clipped windows (3x3, stride 2, SAME) */
static tfl_tensor *b_max_pool_grad_same3(tfl_ctx *c, tfl_tensor *const *in)
{
    const tfl_pool2d_opts o = {{3, 3}, {2, 2}, TFL_PADDING_SAME};
    return max_pool_grad_of(c, in, &o);
}

const bc_case bc_cases[] = {
    {"Identity/f32/view", 1, {INV(F32, 2, 3, 4)}, b_identity},
    {"Identity/i64", 1, {IDX(I64, 9, 2, 2, 3)}, b_identity},
    {"Add/f32/broadcast", 2, {IN(F32, 3, 2, 3, 4), IN(F32, 2, 1, 4)}, b_add},
    {"Add/f32/views", 2, {INV(F32, 2, 3, 5), INV(F32, 2, 3, 5)}, b_add},
    {"Add/i32", 2, {IDX(I32, 100, 2, 3, 4), IDX(I32, 100, 1, 4)}, b_add},
    {"Add/f64", 2, {IN(F64, 2, 3, 4), IN(F64, 0, 0)}, b_add},
    {"Add/f16", 2, {IN(F16, 2, 3, 4), IN(F16, 2, 3, 4)}, b_add},
    {"Add/bf16", 2, {IN(BF16, 2, 3, 4), IN(BF16, 1, 4)}, b_add},
    {"Sub/f32", 2, {IN(F32, 2, 4, 1), IN(F32, 2, 1, 5)}, b_sub},
    {"Sub/i64", 2, {IDX(I64, 50, 1, 6), IDX(I64, 50, 1, 6)}, b_sub},
    {"Mul/f32", 2, {IN(F32, 3, 2, 3, 4), INV(F32, 2, 3, 4)}, b_mul},
    {"Mul/i32", 2, {IDX(I32, 1000, 1, 7), IDX(I32, 1000, 1, 7)}, b_mul},
    {"Div/f32", 2, {IN(F32, 2, 3, 4), INP(F32, 1, 4)}, b_div},
    {"Div/f64", 2, {IN(F64, 2, 3, 4), INP(F64, 2, 3, 4)}, b_div},
    {"Pow/f32", 2, {INP(F32, 2, 3, 4), IN(F32, 2, 3, 4)}, b_pow},
    {"Maximum/f32", 2, {IN(F32, 2, 3, 4), IN(F32, 2, 3, 4)}, b_maximum},
    {"Maximum/i64", 2, {IDX(I64, 9, 1, 8), IDX(I64, 9, 1, 8)}, b_maximum},
    {"Minimum/f32", 2, {IN(F32, 2, 3, 4), IN(F32, 1, 4)}, b_minimum},
    {"Neg/f32", 1, {INV(F32, 2, 3, 4)}, b_neg},
    {"Neg/i32", 1, {IDX(I32, 9, 1, 5)}, b_neg},
    {"Exp/f32", 1, {IN(F32, 2, 3, 4)}, b_exp},
    {"Exp/f64", 1, {IN(F64, 2, 3, 4)}, b_exp},
    {"Log/f32", 1, {INP(F32, 2, 3, 4)}, b_log},
    {"Sqrt/f32", 1, {INP(F32, 2, 3, 4)}, b_sqrt},
    {"Abs/f32", 1, {IN(F32, 2, 3, 4)}, b_abs},
    {"Abs/i64", 1, {IDX(I64, 9, 1, 5)}, b_abs},
    {"Relu/f32", 1, {IN(F32, 2, 3, 4)}, b_relu},
    {"Relu/f16", 1, {IN(F16, 2, 3, 4)}, b_relu},
    {"ReluGrad/f32", 2, {IN(F32, 2, 3, 4), IN(F32, 2, 3, 4)}, b_relu_grad},
    {"LeakyRelu/f32", 1, {IN(F32, 2, 3, 4)}, b_leaky},
    {"Sigmoid/f32", 1, {IN(F32, 2, 3, 4)}, b_sigmoid},
    {"Tanh/f32", 1, {IN(F32, 2, 3, 4)}, b_tanh},
    {"Gelu/f32", 1, {IN(F32, 2, 3, 4)}, b_gelu},
    {"Gelu/f32/tanh", 1, {IN(F32, 2, 3, 4)}, b_gelu_tanh},
    {"Softplus/f32", 1, {IN(F32, 2, 3, 4)}, b_softplus},
    {"Softplus/f64/view", 1, {INV(F64, 2, 3, 5)}, b_softplus},
    {"Silu/f32", 1, {IN(F32, 2, 3, 4)}, b_silu},
    {"Silu/f16", 1, {IN(F16, 2, 3, 4)}, b_silu},
    {"Elu/f32", 1, {IN(F32, 2, 3, 4)}, b_elu},
    {"Elu/f64/view", 1, {INV(F64, 2, 4, 3)}, b_elu},
    {"HardSigmoid/f32", 1, {IN(F32, 2, 3, 4)}, b_hard_sigmoid},
    {"HardSigmoid/bf16", 1, {IN(BF16, 2, 3, 4)}, b_hard_sigmoid},
    {"Softmax/f32", 1, {IN(F32, 2, 3, 5)}, b_softmax},
    {"Softmax/f64/axis0", 1, {INV(F64, 2, 4, 3)}, b_softmax0},
    {"LogSoftmax/f32", 1, {IN(F32, 3, 2, 5, 3)}, b_log_softmax},
    {"LogSoftmax/f32/last", 1, {IN(F32, 2, 4, 7)}, b_log_softmax_last},
    {"LogSoftmax/f64/last", 1, {IN(F64, 3, 2, 3, 9)}, b_log_softmax_last},
    {"Softmax/f64/last_long", 1, {IN(F64, 2, 3, 130)}, b_softmax},
    {"AttentionSoftmax/f32/causal", 1, {IN(F32, 4, 2, 3, 6, 6)}, b_attn_causal},
    /* rows longer than a warp, more keys than queries; a strided (transposed) view */
    {"AttentionSoftmax/f32/causal_long_rows", 1, {IN(F32, 3, 2, 5, 70)}, b_attn_causal},
    {"AttentionSoftmax/f64/strided", 1, {INV(F64, 3, 2, 7, 4)}, b_attn_plain},
    /* rows keeping more keys than a warp has lanes (several passes of each lane) */
    {"AttentionSoftmax/f32/causal_70", 1, {IN(F32, 3, 2, 70, 70)}, b_attn_causal},
    {"AttentionSoftmax/f32/plain_130", 1, {IN(F32, 2, 3, 130)}, b_attn_plain},
    {"AttentionSoftmax/f64/causal_more_queries", 1, {IN(F64, 3, 2, 40, 33)}, b_attn_causal},
    /* SoftmaxGrad along a middle axis (inner > 1) of more than 32 */
    {"Softmax/f32/axis0_long", 1, {INV(F32, 2, 40, 3)}, b_softmax0},
    {"Equal/f32", 2, {IDX(F32, 3, 2, 3, 4), IDX(F32, 3, 1, 4)}, b_equal},
    {"Equal/bool", 2, {INB(1, 6), INB(1, 6)}, b_equal},
    {"NotEqual/i32", 2, {IDX(I32, 3, 2, 3, 4), IDX(I32, 3, 2, 3, 4)}, b_not_equal},
    {"Less/f32", 2, {IN(F32, 2, 3, 4), IN(F32, 2, 3, 4)}, b_less},
    {"LessEqual/i64", 2, {IDX(I64, 4, 2, 3, 4), IDX(I64, 4, 1, 4)}, b_less_equal},
    {"Greater/f64", 2, {IN(F64, 2, 3, 4), IN(F64, 0, 0)}, b_greater},
    {"GreaterEqual/f32", 2, {IDX(F32, 3, 2, 3, 4), IDX(F32, 3, 2, 3, 4)}, b_greater_equal},
    {"LogicalAnd", 2, {INB(2, 3, 4), INB(1, 4)}, b_logical_and},
    {"LogicalOr", 2, {INB(2, 3, 4), INB(2, 3, 4)}, b_logical_or},
    {"LogicalNot", 1, {INB(2, 3, 4)}, b_logical_not},
    {"Sum/f32/axes02", 1, {IN(F32, 3, 3, 4, 5)}, b_sum02},
    {"Sum/f32/all", 1, {INV(F32, 2, 7, 9)}, b_sum_all},
    {"Sum/i64", 1, {IDX(I64, 100, 3, 3, 4, 5)}, b_sum02},
    {"Mean/f32/keepdims", 1, {IN(F32, 3, 2, 6, 3)}, b_mean1},
    {"Mean/i32", 1, {IDX(I32, 100, 3, 2, 6, 3)}, b_mean1},
    {"Max/f32", 1, {IN(F32, 2, 4, 5)}, b_max1},
    {"Min/f64", 1, {IN(F64, 2, 4, 5)}, b_min0},
    {"ArgMax/f32", 1, {IN(F32, 2, 4, 7)}, b_argmax},
    {"ArgMin/i32", 1, {IDX(I32, 5, 2, 6, 3)}, b_argmin},
    {"MatMul/f32", 2, {IN(F32, 2, 5, 7), IN(F32, 2, 7, 3)}, b_matmul},
    {"MatMul/f32/batch-broadcast/tt",
     2,
     {IN(F32, 4, 2, 1, 7, 5), IN(F32, 3, 3, 3, 7)},
     b_matmul_tt},
    {"MatMul/f64/transpose_b", 2, {IN(F64, 3, 2, 4, 6), IN(F64, 3, 2, 5, 6)}, b_matmul_tb},
    {"MatMul/f32/views", 2, {INV(F32, 2, 4, 6), INV(F32, 2, 6, 3)}, b_matmul},
    {"FusedMatMul/f32", 3, {IN(F32, 2, 50, 70), IN(F32, 2, 70, 40), IN(F32, 1, 40)},
     b_matmul_bias},
    {"FusedMatMul/f32/batch-broadcast/tt",
     3,
     {IN(F32, 4, 2, 1, 7, 5), IN(F32, 3, 3, 3, 7), IN(F32, 1, 3)},
     b_matmul_bias_tab},
    {"FusedMatMul/f64/views", 3, {INV(F64, 2, 4, 6), INV(F64, 2, 6, 3), IN(F64, 1, 3)},
     b_matmul_bias},
    {"Reshape/f32", 1, {IN(F32, 3, 2, 3, 4)}, b_reshape},
    {"Transpose/f32", 1, {IN(F32, 3, 2, 3, 4)}, b_transpose},
    {"Slice/f32", 1, {IN(F32, 2, 4, 6)}, b_slice},
    {"ConcatV2/f32", 3, {IN(F32, 2, 2, 3), INV(F32, 2, 2, 1), IN(F32, 2, 2, 4)}, b_concat},
    {"ConcatV2/i32",
     3,
     {IDX(I32, 9, 2, 2, 3), IDX(I32, 9, 2, 2, 1), IDX(I32, 9, 2, 2, 2)},
     b_concat},
    {"GatherV2/f32/axis1", 2, {IN(F32, 3, 2, 5, 3), IDX(I32, 5, 1, 4)}, b_gather},
    {"GatherV2/f64/axis0", 2, {IN(F64, 2, 6, 2), IDX(I64, 6, 2, 2, 3)}, b_gather0},
    {"OneHot/i64", 1, {IDX(I64, 5, 2, 2, 3)}, b_one_hot},
    {"Cast/f32-f64", 1, {INV(F32, 2, 3, 4)}, b_cast_f64},
    {"Cast/f32-f16", 1, {IN(F32, 2, 3, 4)}, b_cast_f16},
    {"Cast/f32-i32", 1, {IN(F32, 2, 3, 4)}, b_cast_i32},
    {"Cast/bool-f32", 1, {INB(2, 3, 4)}, b_cast_bool_f32},
    {"SelectV2/f32", 3, {INB(2, 3, 4), IN(F32, 2, 3, 4), IN(F32, 1, 4)}, b_where},
    {"SelectV2/i64", 3, {INB(1, 4), IDX(I64, 9, 2, 3, 4), IDX(I64, 9, 2, 3, 4)}, b_where},
    {"Erf/f32", 1, {IN(F32, 2, 3, 4)}, b_erf},
    {"Sign/f32", 1, {IN(F32, 2, 3, 4)}, b_sign},
    {"Sign/i32", 1, {IDX(I32, 5, 1, 6)}, b_sign},
    {"Conj/c64", 1, {IN(C64, 2, 3, 4)}, b_conj},
    {"StopGradient/f32", 1, {IN(F32, 2, 3, 4)}, b_stop_gradient},
    {"BroadcastTo/f32", 1, {IN(F32, 2, 3, 1)}, b_broadcast_to},
    {"PadV2/f32", 1, {IN(F32, 2, 3, 4)}, b_pad},
    {"PadV2/i32", 1, {IDX(I32, 9, 2, 3, 4)}, b_pad},
    {"UnsortedSegmentSum/f32", 2, {IN(F32, 2, 6, 3), IDX(I32, 4, 1, 6)}, b_segment_sum},
    {"UnsortedSegmentSum/i64", 2, {IDX(I64, 9, 2, 6, 3), IDX(I64, 4, 1, 6)}, b_segment_sum},
    {"SoftmaxCrossEntropyWithLogits/f32",
     2,
     {IN(F32, 2, 4, 5), PROB(F32, 2, 4, 5)},
     b_softmax_cross_entropy_last},
    {"SparseSoftmaxCrossEntropyWithLogits/f32",
     2,
     {IN(F32, 2, 4, 5), IDX(I32, 5, 1, 4)},
     b_sparse_xent},
    {"SparseSoftmaxCrossEntropyWithLogits/f64",
     2,
     {IN(F64, 2, 3, 6), IDX(I64, 6, 1, 3)},
     b_sparse_xent},
    /* 70 classes: rows longer than a warp's lanes in the gradient's kernel */
    {"SparseSoftmaxCrossEntropyWithLogits/f32/classes_70",
     2,
     {IN(F32, 2, 9, 70), IDX(I64, 70, 1, 9)},
     b_sparse_xent},
    {"SigmoidCrossEntropyWithLogits/f32",
     2,
     {IN(F32, 2, 3, 4), PROB(F32, 2, 3, 4)},
     b_sigmoid_cross_entropy},
    {"LayerNorm/f32", 3, {IN(F32, 3, 4, 3, 40), IN(F32, 1, 40), IN(F32, 1, 40)}, b_layer_norm},
    {"LayerNorm/f64", 3, {IN(F64, 2, 7, 5), IN(F64, 1, 5), IN(F64, 1, 5)}, b_layer_norm},
    {"LayerNorm/f32/strided_no_params", 1, {INV(F32, 2, 6, 33)}, b_layer_norm_plain},
    /* 150 rows: gamma's and beta's sums over three blocks of the CPU's 64 */
    {"LayerNorm/f32/rows_150", 3, {IN(F32, 2, 150, 24), IN(F32, 1, 24), IN(F32, 1, 24)},
     b_layer_norm},
    {"LayerNorm/f32/rows_of_1000", 3, {IN(F32, 2, 3, 1000), IN(F32, 1, 1000), IN(F32, 1, 1000)},
     b_layer_norm},
    {"BatchNormTraining/f32", 3, {IN(F32, 2, 6, 3), IN(F32, 1, 3), IN(F32, 1, 3)},
     b_batch_norm_training},
    {"BatchNormTraining/f64/nhwc", 3, {IN(F64, 4, 2, 3, 4, 5), IN(F64, 1, 5), IN(F64, 1, 5)},
     b_batch_norm_training},
    /* 1024 rows of 64 channels: blocks of 256 rows merged */
    {"BatchNormTraining/f32/blocks", 3,
     {IN(F32, 4, 4, 16, 16, 64), IN(F32, 1, 64), IN(F32, 1, 64)}, b_batch_norm_training},
    {"BatchNormTraining/f32/strided_no_params", 1, {INV(F32, 3, 5, 7, 6)},
     b_batch_norm_training_plain},
    {"BatchMoments/f32/blocks", 1, {IN(F32, 2, 3000, 7)}, b_batch_moments},
    /* 2500 channels: tiles of 1024 on the CPU */
    {"BatchNormTraining/f32/wide", 3, {IN(F32, 2, 40, 2500), IN(F32, 1, 2500), IN(F32, 1, 2500)},
     b_batch_norm_training},
    {"BatchNorm/f32", 3, {IN(F32, 2, 6, 3), IN(F32, 1, 3), INP(F32, 1, 3)}, b_batch_norm},
    {"BatchNorm/f64", 3, {IN(F64, 2, 5, 4), IN(F64, 1, 4), INP(F64, 1, 4)}, b_batch_norm},
    {"BatchNorm/f32/nhwc",
     3,
     {IN(F32, 4, 2, 3, 4, 5), IN(F32, 1, 5), INP(F32, 1, 5)},
     b_batch_norm_nhwc},
    {"BatchNorm/f64/nhwc",
     3,
     {IN(F64, 4, 2, 2, 3, 4), IN(F64, 1, 4), INP(F64, 1, 4)},
     b_batch_norm_nhwc},
    {"BatchNorm/f32/inference",
     4,
     {IN(F32, 2, 6, 3), IN(F32, 1, 3), INP(F32, 1, 3), INP(F32, 1, 3)},
     b_batch_norm_inference},
    {"BatchNorm/f64/inference_nhwc",
     4,
     {IN(F64, 4, 2, 3, 2, 4), IN(F64, 1, 4), INP(F64, 1, 4), INP(F64, 1, 4)},
     b_batch_norm_inference},
    {"Dropout/f32", 1, {IN(F32, 2, 9, 7)}, b_dropout},
    {"Dropout/f64", 1, {IN(F64, 1, 37)}, b_dropout},
    {"Conv2D/f32", 2, {IN(F32, 4, 1, 5, 5, 2), IN(F32, 4, 3, 3, 2, 3)}, b_conv2d},
    {"Conv2D/f32/stride2_valid",
     2,
     {IN(F32, 4, 2, 7, 6, 3), IN(F32, 4, 3, 2, 3, 4)},
     b_conv2d_s2_valid},
    {"Conv2D/f32/stride2_same_asymmetric",
     2,
     {IN(F32, 4, 2, 8, 8, 3), IN(F32, 4, 3, 3, 3, 2)},
     b_conv2d_s2_same},
    {"Conv2D/f32/dilated_same",
     2,
     {IN(F32, 4, 1, 6, 7, 2), IN(F32, 4, 3, 3, 2, 3)},
     b_conv2d_dilated},
    {"Conv2D/f32/1x1", 2, {IN(F32, 4, 2, 4, 5, 3), IN(F32, 4, 1, 1, 3, 5)}, b_conv2d_1x1},
    {"Conv2D/f32/view_filter", 2, {IN(F32, 4, 1, 5, 4, 3), INV(F32, 4, 3, 3, 3, 3)}, b_conv2d},
    {"Conv2D/f64/same", 2, {IN(F64, 4, 2, 5, 5, 2), IN(F64, 4, 3, 3, 2, 3)}, b_conv2d},
    {"Conv2D/f64/stride_dilation_valid",
     2,
     {IN(F64, 4, 2, 7, 9, 2), IN(F64, 4, 2, 3, 2, 3)},
     b_conv2d_mixed},
    {"Conv2D/f64/1x1", 2, {IN(F64, 4, 1, 3, 4, 4), IN(F64, 4, 1, 1, 4, 2)}, b_conv2d_1x1},
    {"Conv2DBackpropInput/f32/stride2_same",
     2,
     {IN(F32, 4, 3, 3, 3, 2), IN(F32, 4, 2, 4, 4, 2)},
     b_conv2d_backprop_input},
    {"Conv2DBackpropFilter/f64/stride_dilation_valid",
     2,
     {IN(F64, 4, 2, 6, 5, 2), IN(F64, 4, 2, 3, 1, 3)},
     b_conv2d_backprop_filter},
    {"MaxPool/f32", 1, {IN(F32, 4, 1, 4, 4, 2)}, b_max_pool},
    {"AvgPool/f32", 1, {IN(F32, 4, 1, 4, 5, 2)}, b_avg_pool},
    {"MaxPoolGrad/f32", 2, {IN(F32, 4, 1, 4, 4, 2), IN(F32, 4, 1, 2, 2, 2)}, b_max_pool_grad},
    {"MaxPool/f32/stride>window", 1, {IN(F32, 4, 2, 7, 8, 3)}, b_max_pool_s3},
    {"AvgPool/f64/stride>window", 1, {IN(F64, 4, 2, 7, 8, 3)}, b_avg_pool_s3},
    {"MaxPool/f32/same-clipped", 1, {IN(F32, 4, 2, 5, 6, 3)}, b_max_pool_same3},
    {"AvgPool/f32/same-clipped", 1, {IN(F32, 4, 2, 5, 6, 3)}, b_avg_pool_same3},
    {"AvgPool/f64/same-clipped", 1, {INV(F64, 4, 1, 6, 4, 5)}, b_avg_pool_same_k4s1},
    {"MaxPool/f32/ties", 1, {IDX(F32, 3, 4, 2, 6, 6, 17)}, b_max_pool_same3},
    {"MaxPool/f64/ties", 1, {IDX(F64, 2, 4, 1, 7, 5, 3)}, b_max_pool_same_k4s1},
    {"MaxPool/f64/ties-disjoint", 1, {IDX(F64, 2, 4, 1, 6, 6, 2)}, b_max_pool},
    {"MaxPool/f64", 1, {IN(F64, 4, 2, 5, 6, 3)}, b_max_pool_same3},
    {"MaxPoolGrad/f64/same-clipped",
     2,
     {IN(F64, 4, 2, 5, 6, 3), IN(F64, 4, 2, 3, 3, 3)},
     b_max_pool_grad_same3},
    {"MaxPoolGrad/f32/ties",
     2,
     {IDX(F32, 3, 4, 1, 6, 7, 4), IN(F32, 4, 1, 3, 4, 4)},
     b_max_pool_grad_same3},
};
const int bc_n_cases = (int)(sizeof bc_cases / sizeof bc_cases[0]);
