/*
 * framework/ops/conv.c: entry points of the 2-D window ops: Conv2D and its two backprops,
 * MaxPool and AvgPool with their gradient ops (MaxPoolGrad, MaxPoolGradGrad, AvgPoolGrad,
 * internal: the backward rules call them). Each checks ranks, dtypes and options, resolves
 * the window's geometry once with TensorFlow's output-size and SAME-padding rules
 * (kernel_shape_util.cc) into tfl__window_attrs, and hands it to tfl__op_run. The kernels
 * are in cpu/k_conv.c and cpu/k_pool.c.
 */
#include "op.h"

#include <limits.h>

static const char *const k_axis[2] = {"height", "width"};

static const char *padding_name(int p)
{
    return p == TFL_PADDING_SAME ? "SAME" : "VALID";
}

static bool check_padding(tfl_ctx *ctx, const char *name, int padding)
{
    TFL_CHECK_RET(ctx, padding == TFL_PADDING_VALID || padding == TFL_PADDING_SAME, false,
                  TFL_INVALID_ARGUMENT,
                  "%s: padding %d is neither TFL_PADDING_VALID (0) nor TFL_PADDING_SAME (1)", name,
                  padding);
    return true;
}

/* "Conv2D: input must be 4-dimensional (N, H, W, C), got shape (5, 5, 3)" */
static bool check_rank4(tfl_ctx *ctx, const char *name, const char *what, const tfl_tensor *t,
                        const char *layout)
{
    char s[128];
    TFL_CHECK_RET(ctx, t->rank == 4, false, TFL_INVALID_ARGUMENT,
                  "%s: %s must be 4-dimensional %s, got shape %s", name, what, layout,
                  tfl__shape_str(t->rank, t->shape, s, sizeof s));
    return true;
}

/* A caller's shape array: given and without negative dimensions. */
static bool check_shape_arg(tfl_ctx *ctx, const char *name, const char *what, const int64_t *shape)
{
    TFL_CHECK_RET(ctx, shape, false, TFL_INVALID_ARGUMENT, "%s: %s is NULL", name, what);
    char s[128];
    for (int i = 0; i < 4; i++)
        TFL_CHECK_RET(ctx, shape[i] >= 0, false, TFL_INVALID_ARGUMENT,
                      "%s: %s %s has a negative dimension", name, what,
                      tfl__shape_str(4, shape, s, sizeof s));
    return true;
}

/* Both operands of one floating dtype: "dtypes differ: input is float32, filter is float64" */
static bool check_pair(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor **pa, const char *an,
                       const tfl_tensor **pb, const char *bn)
{
    const tfl_tensor *in[2] = {*pa, *pb};
    if (!tfl__check_inputs(ctx, op, 2, in) || !tfl__autocast(ctx, op, 2, in)) return false;
    const tfl_tensor *a = *pa = in[0], *b = *pb = in[1];
    if (!tfl__check_dtype(ctx, op, (tfl_dtype)a->dtype)) return false;
    TFL_CHECK_RET(ctx, a->dtype == b->dtype, false, TFL_INVALID_ARGUMENT,
                  "%s: dtypes differ: %s is %s, %s is %s (tapeflow does not promote; use "
                  "tfl_cast)",
                  tfl__op_defs[op].name, an, tfl_dtype_name((tfl_dtype)a->dtype), bn,
                  tfl_dtype_name((tfl_dtype)b->dtype));
    return true;
}

/*
 * One spatial axis (ax: 0 rows, 1 columns) of a window k with stride s and dilation d over
 * `in` elements: the output size and the padding before, by TensorFlow's rules (ops.h).
 * conv: the message speaks of a filter (and its dilation), else of a pooling window.
 */
static bool window_axis(tfl_ctx *ctx, const char *name, bool conv, int ax, int64_t in, int64_t k,
                        int64_t s, int64_t d, int padding, tfl__window_attrs *a, int64_t *out)
{
    int64_t ke = (k - 1) * d + 1, o, pad = 0; /* k, d < 2^31: no overflow */
    if (padding == TFL_PADDING_VALID) {
        o = in >= ke ? (in - ke) / s + 1 : 0;
    } else {
        o = in / s + (in % s != 0);
        int64_t total = (o - 1) * s + ke - in;
        pad = total > 0 ? total / 2 : 0;
    }
    const char *why = padding == TFL_PADDING_VALID ? "the window does not fit in the input"
                                                   : "the input is empty";
    if (TFL_UNLIKELY(o <= 0)) {
        if (conv)
            tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                           "%s: computed output %s would be 0 [input %s %lld, effective filter "
                           "%s %lld (filter %lld, dilation %lld), stride %lld, %s padding]: %s",
                           name, k_axis[ax], k_axis[ax], (long long)in, k_axis[ax], (long long)ke,
                           (long long)k, (long long)d, (long long)s, padding_name(padding), why);
        else
            tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                           "%s: computed output %s would be 0 [input %s %lld, window %s %lld, "
                           "stride %lld, %s padding]: %s",
                           name, k_axis[ax], k_axis[ax], (long long)in, k_axis[ax], (long long)k,
                           (long long)s, padding_name(padding), why);
        return false;
    }
    a->ksize[ax] = k;
    a->strides[ax] = s;
    a->dilations[ax] = d;
    a->pad[ax] = pad;
    *out = o;
    return true;
}

/* ---- convolutions -------------------------------------------------------------------------- */

/*
 * The geometry of a convolution of an input of shape xs (N, H, W, Cin) with a filter of
 * shape fs (KH, KW, Cin, Cout): attrs (all but shape) and the output shape (N, OH, OW, Cout).
 */
static bool conv_setup(tfl_ctx *ctx, tfl__op_id op, const int64_t *xs, const int64_t *fs,
                       const tfl_conv2d_opts *opts, tfl__window_attrs *a, int64_t out[4])
{
    const char *name = tfl__op_defs[op].name;
    static const tfl_conv2d_opts defaults = {{1, 1}, {1, 1}, TFL_PADDING_VALID};
    if (!opts) opts = &defaults;
    char s1[128], s2[128];
    TFL_CHECK_RET(ctx, opts->strides[0] >= 0 && opts->strides[1] >= 0, false, TFL_INVALID_ARGUMENT,
                  "%s: strides must be >= 0 (0 means 1), got (%d, %d)", name, opts->strides[0],
                  opts->strides[1]);
    TFL_CHECK_RET(ctx, opts->dilations[0] >= 0 && opts->dilations[1] >= 0, false,
                  TFL_INVALID_ARGUMENT, "%s: dilations must be >= 0 (0 means 1), got (%d, %d)",
                  name, opts->dilations[0], opts->dilations[1]);
    if (!check_padding(ctx, name, (int)opts->padding)) return false;
    TFL_CHECK_RET(ctx, xs[3] == fs[2], false, TFL_INVALID_ARGUMENT,
                  "%s: input depth %lld does not match the filter's input depth %lld: input "
                  "shape %s, filter shape %s",
                  name, (long long)xs[3], (long long)fs[2], tfl__shape_str(4, xs, s1, sizeof s1),
                  tfl__shape_str(4, fs, s2, sizeof s2));
    TFL_CHECK_RET(ctx, fs[0] >= 1 && fs[1] >= 1 && fs[0] <= INT_MAX && fs[1] <= INT_MAX, false,
                  TFL_INVALID_ARGUMENT,
                  "%s: the filter's height and width must be >= 1, got filter shape %s", name,
                  tfl__shape_str(4, fs, s2, sizeof s2));
    memset(a, 0, sizeof *a);
    a->padding = (int32_t)opts->padding;
    out[0] = xs[0];
    out[3] = fs[3];
    for (int ax = 0; ax < 2; ax++) {
        int64_t s = opts->strides[ax] ? opts->strides[ax] : 1;
        int64_t d = opts->dilations[ax] ? opts->dilations[ax] : 1;
        if (!window_axis(ctx, name, true, ax, xs[1 + ax], fs[ax], s, d, (int)opts->padding, a,
                         &out[1 + ax]))
            return false;
    }
    return tfl__check_new(ctx, name, TFL_DTYPE_FLOAT32, 4, out);
}

/* dy must have the convolution's output shape: "dy shape (..) does not match the output
 * shape (..) of input shape (..), filter shape (..) and these options" */
static bool check_dy(tfl_ctx *ctx, const char *name, const tfl_tensor *dy, const int64_t *want,
                     const int64_t *xs, const int64_t *fs)
{
    char s1[128], s2[128], s3[128], s4[128];
    TFL_CHECK_RET(ctx, tfl__same_shape(dy->rank, dy->shape, 4, want), false, TFL_INVALID_ARGUMENT,
                  "%s: dy shape %s does not match the output shape %s of input shape %s, filter "
                  "shape %s and these options",
                  name, tfl__shape_str(dy->rank, dy->shape, s1, sizeof s1),
                  tfl__shape_str(4, want, s2, sizeof s2), tfl__shape_str(4, xs, s3, sizeof s3),
                  tfl__shape_str(4, fs, s4, sizeof s4));
    return true;
}

tfl_tensor *tfl_conv2d(tfl_ctx *ctx, const tfl_tensor *input, const tfl_tensor *filter,
                       const tfl_conv2d_opts *opts)
{
    if (!ctx) return NULL;
    const tfl__op_id op = TFL_OP_CONV2D;
    const char *name = tfl__op_defs[op].name;
    if (!check_pair(ctx, op, &input, "input", &filter, "filter") ||
        !check_rank4(ctx, name, "input", input, "(N, H, W, C)") ||
        !check_rank4(ctx, name, "filter", filter, "(KH, KW, Cin, Cout)"))
        return NULL;
    tfl__window_attrs a;
    int64_t out[4];
    if (!conv_setup(ctx, op, input->shape, filter->shape, opts, &a, out)) return NULL;
    const tfl_tensor *in[2] = {input, filter};
    return tfl__op_run(ctx, op, (tfl_dtype)input->dtype, 2, in, (tfl_dtype)input->dtype, 4, out,
                       &a);
}

tfl_tensor *tfl_conv2d_backprop_input(tfl_ctx *ctx, const int64_t input_shape[4],
                                      const tfl_tensor *filter, const tfl_tensor *dy,
                                      const tfl_conv2d_opts *opts)
{
    if (!ctx) return NULL;
    const tfl__op_id op = TFL_OP_CONV2D_BACKPROP_INPUT;
    const char *name = tfl__op_defs[op].name;
    if (!check_pair(ctx, op, &filter, "filter", &dy, "dy") ||
        !check_shape_arg(ctx, name, "input_shape", input_shape) ||
        !check_rank4(ctx, name, "filter", filter, "(KH, KW, Cin, Cout)") ||
        !check_rank4(ctx, name, "dy", dy, "(N, OH, OW, Cout)"))
        return NULL;
    tfl__window_attrs a;
    int64_t out[4];
    if (!conv_setup(ctx, op, input_shape, filter->shape, opts, &a, out) ||
        !check_dy(ctx, name, dy, out, input_shape, filter->shape) ||
        !tfl__check_new(ctx, name, (tfl_dtype)dy->dtype, 4, input_shape))
        return NULL;
    memcpy(a.shape, input_shape, sizeof a.shape);
    const tfl_tensor *in[2] = {filter, dy};
    return tfl__op_run(ctx, op, (tfl_dtype)dy->dtype, 2, in, (tfl_dtype)dy->dtype, 4, input_shape,
                       &a);
}

tfl_tensor *tfl_conv2d_backprop_filter(tfl_ctx *ctx, const tfl_tensor *input,
                                       const int64_t filter_shape[4], const tfl_tensor *dy,
                                       const tfl_conv2d_opts *opts)
{
    if (!ctx) return NULL;
    const tfl__op_id op = TFL_OP_CONV2D_BACKPROP_FILTER;
    const char *name = tfl__op_defs[op].name;
    if (!check_pair(ctx, op, &input, "input", &dy, "dy") ||
        !check_shape_arg(ctx, name, "filter_shape", filter_shape) ||
        !check_rank4(ctx, name, "input", input, "(N, H, W, C)") ||
        !check_rank4(ctx, name, "dy", dy, "(N, OH, OW, Cout)"))
        return NULL;
    tfl__window_attrs a;
    int64_t out[4];
    if (!conv_setup(ctx, op, input->shape, filter_shape, opts, &a, out) ||
        !check_dy(ctx, name, dy, out, input->shape, filter_shape) ||
        !tfl__check_new(ctx, name, (tfl_dtype)dy->dtype, 4, filter_shape))
        return NULL;
    memcpy(a.shape, filter_shape, sizeof a.shape);
    const tfl_tensor *in[2] = {input, dy};
    return tfl__op_run(ctx, op, (tfl_dtype)dy->dtype, 2, in, (tfl_dtype)dy->dtype, 4, filter_shape,
                       &a);
}

/* ---- pooling ------------------------------------------------------------------------------- */

/* The geometry of pooling an input of shape xs (N, H, W, C): attrs (all but shape) and the
 * pooled shape (N, OH, OW, C). */
static bool pool_setup(tfl_ctx *ctx, tfl__op_id op, const int64_t *xs, const tfl_pool2d_opts *opts,
                       tfl__window_attrs *a, int64_t out[4])
{
    const char *name = tfl__op_defs[op].name;
    TFL_CHECK_RET(ctx, opts, false, TFL_INVALID_ARGUMENT,
                  "%s: opts is NULL (the window size has no default)", name);
    TFL_CHECK_RET(ctx, opts->ksize[0] >= 1 && opts->ksize[1] >= 1, false, TFL_INVALID_ARGUMENT,
                  "%s: ksize must be >= 1, got (%d, %d)", name, opts->ksize[0], opts->ksize[1]);
    TFL_CHECK_RET(ctx, opts->strides[0] >= 0 && opts->strides[1] >= 0, false, TFL_INVALID_ARGUMENT,
                  "%s: strides must be >= 0 (0 means the window size), got (%d, %d)", name,
                  opts->strides[0], opts->strides[1]);
    if (!check_padding(ctx, name, (int)opts->padding)) return false;
    memset(a, 0, sizeof *a);
    a->padding = (int32_t)opts->padding;
    out[0] = xs[0];
    out[3] = xs[3];
    for (int ax = 0; ax < 2; ax++) {
        int64_t s = opts->strides[ax] ? opts->strides[ax] : opts->ksize[ax];
        if (!window_axis(ctx, name, false, ax, xs[1 + ax], opts->ksize[ax], s, 1,
                         (int)opts->padding, a, &out[1 + ax]))
            return false;
    }
    return true;
}

/* other must have `want`'s shape: "dy shape (..) does not match the pooled shape (..) of
 * input shape (..)" (what: the operand, kind: "pooled" or "input") */
static bool check_like(tfl_ctx *ctx, const char *name, const char *what, const tfl_tensor *t,
                       const char *kind, const int64_t *want, const int64_t *xs)
{
    char s1[128], s2[128], s3[128];
    TFL_CHECK_RET(ctx, tfl__same_shape(t->rank, t->shape, 4, want), false, TFL_INVALID_ARGUMENT,
                  "%s: %s shape %s does not match the %s shape %s of input shape %s", name, what,
                  tfl__shape_str(t->rank, t->shape, s1, sizeof s1), kind,
                  tfl__shape_str(4, want, s2, sizeof s2), tfl__shape_str(4, xs, s3, sizeof s3));
    return true;
}

static tfl_tensor *pool(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *input,
                        const tfl_pool2d_opts *opts)
{
    if (!ctx) return NULL;
    if (!tfl__check_inputs(ctx, op, 1, &input) ||
        !tfl__check_dtype(ctx, op, (tfl_dtype)input->dtype) ||
        !check_rank4(ctx, tfl__op_defs[op].name, "input", input, "(N, H, W, C)"))
        return NULL;
    tfl__window_attrs a;
    int64_t out[4];
    if (!pool_setup(ctx, op, input->shape, opts, &a, out)) return NULL;
    return tfl__op_run(ctx, op, (tfl_dtype)input->dtype, 1, &input, (tfl_dtype)input->dtype, 4, out,
                       &a);
}

tfl_tensor *tfl_max_pool2d(tfl_ctx *ctx, const tfl_tensor *input, const tfl_pool2d_opts *opts)
{
    return pool(ctx, TFL_OP_MAX_POOL, input, opts);
}

tfl_tensor *tfl_avg_pool2d(tfl_ctx *ctx, const tfl_tensor *input, const tfl_pool2d_opts *opts)
{
    return pool(ctx, TFL_OP_AVG_POOL, input, opts);
}

/* MaxPoolGrad (x, dy) -> x's shape and MaxPoolGradGrad (x, g) -> the pooled shape */
static tfl_tensor *max_pool_grads(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *x,
                                  const tfl_tensor *other, const char *other_name,
                                  const tfl_pool2d_opts *opts)
{
    if (!ctx) return NULL;
    const char *name = tfl__op_defs[op].name;
    if (!check_pair(ctx, op, &x, "x", &other, other_name) ||
        !check_rank4(ctx, name, "x", x, "(N, H, W, C)"))
        return NULL;
    tfl__window_attrs a;
    int64_t pooled[4];
    if (!pool_setup(ctx, op, x->shape, opts, &a, pooled)) return NULL;
    bool grad = op == TFL_OP_MAX_POOL_GRAD;
    if (grad ? !check_like(ctx, name, other_name, other, "pooled", pooled, x->shape)
             : !check_like(ctx, name, other_name, other, "input", x->shape, x->shape))
        return NULL;
    const tfl_tensor *in[2] = {x, other};
    return tfl__op_run(ctx, op, (tfl_dtype)x->dtype, 2, in, (tfl_dtype)x->dtype, 4,
                       grad ? x->shape : pooled, &a);
}

tfl_tensor *tfl__max_pool_grad(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *dy,
                               const tfl_pool2d_opts *opts)
{
    return max_pool_grads(ctx, TFL_OP_MAX_POOL_GRAD, x, dy, "dy", opts);
}

tfl_tensor *tfl__max_pool_grad_grad(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *g,
                                    const tfl_pool2d_opts *opts)
{
    return max_pool_grads(ctx, TFL_OP_MAX_POOL_GRAD_GRAD, x, g, "g", opts);
}

tfl_tensor *tfl__avg_pool_grad(tfl_ctx *ctx, const int64_t input_shape[4], const tfl_tensor *dy,
                               const tfl_pool2d_opts *opts)
{
    if (!ctx) return NULL;
    const tfl__op_id op = TFL_OP_AVG_POOL_GRAD;
    const char *name = tfl__op_defs[op].name;
    if (!tfl__check_inputs(ctx, op, 1, &dy) || !tfl__check_dtype(ctx, op, (tfl_dtype)dy->dtype) ||
        !check_shape_arg(ctx, name, "input_shape", input_shape))
        return NULL;
    tfl__window_attrs a;
    int64_t pooled[4];
    if (!pool_setup(ctx, op, input_shape, opts, &a, pooled) ||
        !check_like(ctx, name, "dy", dy, "pooled", pooled, input_shape) ||
        !tfl__check_new(ctx, name, (tfl_dtype)dy->dtype, 4, input_shape))
        return NULL;
    memcpy(a.shape, input_shape, sizeof a.shape);
    return tfl__op_run(ctx, op, (tfl_dtype)dy->dtype, 1, &dy, (tfl_dtype)dy->dtype, 4, input_shape,
                       &a);
}
