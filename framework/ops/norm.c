/*
 * framework/ops/norm.c: entry points of batch normalization (one fused op, BatchNorm, with
 * [C] parameters along x's last axis), moments (a composition of ordinary ops, so a tape
 * differentiates it) and dropout (one op, Dropout, whose attrs keep the resolved Philox key
 * so that its backward rule drops dy with the same mask). Kernels: cpu/k_norm.c.
 */
#include "op.h"

#include <math.h>

/* ---- batch normalization ------------------------------------------------------------------ */

/* p (named `what`) has x's dtype and shape (C,), C = x's last dimension */
static bool check_param(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *x, const tfl_tensor *p,
                        const char *what)
{
    const char *name = tfl__op_defs[op].name;
    TFL_CHECK_RET(ctx, p->refs > 0, false, TFL_MISUSE,
                  "%s: %s is a tensor already released (use after release)", name, what);
    TFL_CHECK_RET(ctx, p->ctx == ctx, false, TFL_MISUSE, "%s: %s belongs to another context",
                  name, what);
    TFL_CHECK_RET(ctx, p->dtype == x->dtype, false, TFL_INVALID_ARGUMENT,
                  "%s: dtypes differ: x is %s, %s is %s (tapeflow does not promote; use tfl_cast)",
                  name, tfl_dtype_name((tfl_dtype)x->dtype), what,
                  tfl_dtype_name((tfl_dtype)p->dtype));
    const int64_t c = x->shape[x->rank - 1];
    char sx[128], sp[128], sc[32];
    TFL_CHECK_RET(ctx, tfl__same_shape(p->rank, p->shape, 1, &c), false, TFL_INVALID_ARGUMENT,
                  "%s: %s must have shape %s (the last dimension of x, whose shape is %s), got %s",
                  name, what, tfl__shape_str(1, &c, sc, sizeof sc),
                  tfl__shape_str(x->rank, x->shape, sx, sizeof sx),
                  tfl__shape_str(p->rank, p->shape, sp, sizeof sp));
    if (TFL_UNLIKELY(p->flags & TFL_TENSOR_FLAG_UNINIT) && !tfl__check_readable(ctx, name, p))
        return false;
    return true;
}

static bool check_norm_x(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *x, double epsilon,
                         const char *axis_is)
{
    const char *name = tfl__op_defs[op].name;
    if (!tfl__check_dtype(ctx, op, (tfl_dtype)x->dtype)) return false;
    TFL_CHECK_RET(ctx, x->rank >= 1, false, TFL_INVALID_ARGUMENT,
                  "%s: x must have rank >= 1 (%s on the last axis), got shape ()", name, axis_is);
    TFL_CHECK_RET(ctx, epsilon > 0, false, TFL_INVALID_ARGUMENT,
                  "%s: epsilon must be > 0, got %g", name, epsilon);
    return true;
}

/*
 * The op on in[0 .. n_in), its output of x's dtype and shape, where a NULL in[i] (an optional
 * parameter: offset, scale, gamma, beta) is a (C) constant of fill[i] (a tape gives it no
 * gradient). The constants live in a frame of their own so that only the result reaches the
 * caller's frame.
 */
static tfl_tensor *run_norm(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *x, int n_in,
                            const tfl_tensor *const *in, const double *fill, const void *attrs)
{
    const tfl_dtype dt = (tfl_dtype)x->dtype;
    bool given = true;
    for (int i = 0; i < n_in; i++) given &= in[i] != NULL;
    if (given) return tfl__op_run(ctx, op, dt, n_in, in, dt, x->rank, x->shape, attrs);
    if (tfl_frame_push(ctx) != TFL_OK) return NULL;
    const int64_t ch = x->shape[x->rank - 1];
    const tfl_tensor *all[5];
    bool ok = true;
    for (int i = 0; i < n_in; i++) {
        all[i] = in[i] ? in[i] : tfl_fill(ctx, dt, 1, &ch, fill[i]);
        ok &= all[i] != NULL;
    }
    tfl_tensor *y = ok ? tfl__op_run(ctx, op, dt, n_in, all, dt, x->rank, x->shape, attrs) : NULL;
    tfl_keep(y);
    tfl_frame_pop(ctx);
    return y ? tfl__frame_adopt(ctx, y) : NULL;
}

tfl_tensor *tfl_batch_norm(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *mean,
                           const tfl_tensor *variance, const tfl_tensor *offset,
                           const tfl_tensor *scale, double epsilon)
{
    if (!ctx) return NULL;
    const tfl__op_id op = TFL_OP_BATCH_NORM;
    const tfl_tensor *req[3] = {x, mean, variance};
    const tfl_tensor *all[5] = {x, mean, variance, offset, scale};
    if (!tfl__check_inputs(ctx, op, 3, req) || !tfl__autocast(ctx, op, 5, all)) return NULL;
    x = all[0];
    mean = all[1];
    variance = all[2];
    offset = all[3];
    scale = all[4];
    if (!check_norm_x(ctx, op, x, epsilon, "channels") || !check_param(ctx, op, x, mean, "mean") ||
        !check_param(ctx, op, x, variance, "variance") ||
        (offset && !check_param(ctx, op, x, offset, "offset")) ||
        (scale && !check_param(ctx, op, x, scale, "scale")))
        return NULL;
    const tfl__batch_norm_attrs attrs = {epsilon};
    return run_norm(ctx, op, x, 5, (const tfl_tensor *[5]){x, mean, variance, offset, scale},
                    (const double[5]){0, 0, 0, 0, 1}, &attrs);
}

/* ---- batch normalization in training mode -------------------------------------------------- */

/* x's BatchMoments, (2, C): its mean and biased variance per channel over every other axis */
static tfl_tensor *batch_moments(tfl_ctx *ctx, const tfl_tensor *x)
{
    const int64_t shape[2] = {2, x->shape[x->rank - 1]};
    return tfl__op_run(ctx, TFL_OP_BATCH_MOMENTS, (tfl_dtype)x->dtype, 1, &x,
                       (tfl_dtype)x->dtype, 2, shape, NULL);
}

/* row r of the (2, C) moments as a (C) tensor */
static tfl_tensor *moment(tfl_ctx *ctx, const tfl_tensor *moments, int64_t r)
{
    const int64_t c = moments->shape[1];
    return tfl_reshape(ctx, tfl_slice(ctx, moments, (int64_t[]){r, 0}, (int64_t[]){1, c}), 1, &c);
}

tfl_tensor *tfl_batch_norm_training(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *gamma,
                                    const tfl_tensor *beta, double epsilon, tfl_tensor **mean,
                                    tfl_tensor **variance)
{
    if (mean) *mean = NULL;
    if (variance) *variance = NULL;
    if (!ctx) return NULL;
    const tfl__op_id op = TFL_OP_BATCH_NORM_TRAINING;
    const tfl_tensor *in[3] = {x, gamma, beta}; /* a policy casts all three alike */
    if (!tfl__check_inputs(ctx, op, 1, in) || !tfl__autocast(ctx, op, 3, in) ||
        !check_norm_x(ctx, op, in[0], epsilon, "channels") ||
        (in[1] && !check_param(ctx, op, in[0], in[1], "gamma")) ||
        (in[2] && !check_param(ctx, op, in[0], in[2], "beta")))
        return NULL;
    if (tfl_frame_push(ctx) != TFL_OK) return NULL;
    /* float16/bfloat16 in float32, rounded once at the end: the statistics and the
     * gradients' per-channel sums stay float32 (a sum of dy over 65,504 overflows float16) */
    const tfl_dtype dt = (tfl_dtype)in[0]->dtype;
    const bool half = (TFL_MASK_HALF >> dt & 1u) != 0;
    for (int i = 0; half && i < 3; i++)
        if (in[i]) in[i] = tfl_cast(ctx, in[i], TFL_DTYPE_FLOAT32);
    tfl_tensor *moments = in[0] && (!gamma || in[1]) && (!beta || in[2])
                              ? batch_moments(ctx, in[0])
                              : NULL;
    tfl_tensor *y = moments ? tfl__batch_norm_apply(ctx, in[0], moments, in[1], in[2], epsilon)
                            : NULL;
    tfl_tensor *m = y && mean ? moment(ctx, moments, 0) : NULL;
    tfl_tensor *v = y && variance ? moment(ctx, moments, 1) : NULL;
    if (half) {
        y = tfl_cast(ctx, y, dt);
        m = m ? tfl_cast(ctx, m, dt) : NULL;
        v = v ? tfl_cast(ctx, v, dt) : NULL;
    }
    const bool ok = y && (!mean || m) && (!variance || v);
    if (ok) {
        tfl_keep(y);
        tfl_keep(m);
        tfl_keep(v);
    }
    tfl_frame_pop(ctx);
    if (!ok) return NULL;
    if (mean) *mean = tfl__frame_adopt(ctx, m);
    if (variance) *variance = tfl__frame_adopt(ctx, v);
    return tfl__frame_adopt(ctx, y);
}

/* m is (2, C) with x's dtype: x's moments or its parameters' gradients */
static bool check_pair(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *x, const tfl_tensor *m,
                       const char *what)
{
    const int64_t shape[2] = {2, x->shape[x->rank - 1]};
    TFL_CHECK_RET(ctx, m->dtype == x->dtype && tfl__same_shape(m->rank, m->shape, 2, shape),
                  false, TFL_INTERNAL, "%s: %s must have x's dtype and shape (2, C)",
                  tfl__op_defs[op].name, what);
    return true;
}

/* dy (when given) has x's dtype and shape */
static bool check_dy(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *x, const tfl_tensor *dy)
{
    if (!tfl__check_same_dtype(ctx, op, x, dy)) return false;
    char sx[128], sd[128];
    TFL_CHECK_RET(ctx, tfl__same_shape(dy->rank, dy->shape, x->rank, x->shape), false,
                  TFL_INVALID_ARGUMENT, "%s: dy must have x's shape %s, got %s",
                  tfl__op_defs[op].name, tfl__shape_str(x->rank, x->shape, sx, sizeof sx),
                  tfl__shape_str(dy->rank, dy->shape, sd, sizeof sd));
    return true;
}

tfl_tensor *tfl__batch_norm_apply(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *moments,
                                  const tfl_tensor *gamma, const tfl_tensor *beta, double epsilon)
{
    const tfl__op_id op = TFL_OP_BATCH_NORM_TRAINING;
    const tfl_tensor *req[2] = {x, moments};
    if (!tfl__check_inputs(ctx, op, 2, req) || !check_norm_x(ctx, op, x, epsilon, "channels") ||
        !check_pair(ctx, op, x, moments, "moments") ||
        (gamma && !check_param(ctx, op, x, gamma, "gamma")) ||
        (beta && !check_param(ctx, op, x, beta, "beta")))
        return NULL;
    const tfl__batch_norm_attrs attrs = {epsilon};
    return run_norm(ctx, op, x, 4, (const tfl_tensor *[4]){x, moments, gamma, beta},
                    (const double[4]){0, 0, 1, 0}, &attrs);
}

tfl_tensor *tfl__batch_norm_param_grad(tfl_ctx *ctx, const tfl_tensor *dy, const tfl_tensor *x,
                                       const tfl_tensor *moments, double epsilon)
{
    const tfl__op_id op = TFL_OP_BATCH_NORM_PARAM_GRAD;
    const tfl_tensor *in[3] = {dy, x, moments};
    if (!tfl__check_inputs(ctx, op, 3, in) || !tfl__autocast(ctx, op, 2, in)) return NULL;
    dy = in[0];
    x = in[1];
    if (!check_norm_x(ctx, op, x, epsilon, "channels") ||
        !check_dy(ctx, op, x, dy) || !check_pair(ctx, op, x, moments, "moments"))
        return NULL;
    const tfl__batch_norm_attrs attrs = {epsilon};
    return tfl__op_run(ctx, op, (tfl_dtype)x->dtype, 3, in, (tfl_dtype)x->dtype, 2,
                       moments->shape, &attrs);
}

tfl_tensor *tfl__batch_norm_training_grad(tfl_ctx *ctx, const tfl_tensor *dy,
                                          const tfl_tensor *x, const tfl_tensor *moments,
                                          const tfl_tensor *gamma, const tfl_tensor *sums,
                                          double epsilon)
{
    const tfl__op_id op = TFL_OP_BATCH_NORM_TRAINING_GRAD;
    const tfl_tensor *req[3] = {dy, x, moments};
    if (!tfl__check_inputs(ctx, op, 3, req) || !tfl__autocast(ctx, op, 2, req)) return NULL;
    dy = req[0];
    x = req[1];
    if (!check_norm_x(ctx, op, x, epsilon, "channels") ||
        !check_dy(ctx, op, x, dy) || !check_pair(ctx, op, x, moments, "moments") ||
        (gamma && !check_param(ctx, op, x, gamma, "gamma")) ||
        (sums && !check_pair(ctx, op, x, sums, "sums")))
        return NULL;
    const tfl__batch_norm_attrs attrs = {epsilon};
    const double fill[5] = {0, 0, 0, 1, 0}; /* gamma: ones */
    if (sums)
        return run_norm(ctx, op, x, 5, (const tfl_tensor *[5]){dy, x, moments, gamma, sums}, fill,
                        &attrs);
    if (tfl_frame_push(ctx) != TFL_OK) return NULL;
    const tfl_tensor *s = tfl__batch_norm_param_grad(ctx, dy, x, moments, epsilon);
    tfl_tensor *dx = s ? run_norm(ctx, op, x, 5, (const tfl_tensor *[5]){dy, x, moments, gamma, s},
                                  fill, &attrs)
                       : NULL;
    tfl_keep(dx);
    tfl_frame_pop(ctx);
    return dx ? tfl__frame_adopt(ctx, dx) : NULL;
}

/* ---- layer normalization ------------------------------------------------------------------ */

tfl_tensor *tfl_layer_norm(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *gamma,
                           const tfl_tensor *beta, double epsilon)
{
    if (!ctx) return NULL;
    const tfl__op_id op = TFL_OP_LAYER_NORM;
    const tfl_tensor *in[3] = {x, gamma, beta}; /* a policy casts all three alike */
    if (!tfl__check_inputs(ctx, op, 1, in) || !tfl__autocast(ctx, op, 3, in)) return NULL;
    x = in[0];
    gamma = in[1];
    beta = in[2];
    if (!check_norm_x(ctx, op, x, epsilon, "features") ||
        (gamma && !check_param(ctx, op, x, gamma, "gamma")) ||
        (beta && !check_param(ctx, op, x, beta, "beta")))
        return NULL;
    const tfl__layer_norm_attrs attrs = {epsilon};
    return run_norm(ctx, op, x, 3, (const tfl_tensor *[3]){x, gamma, beta},
                    (const double[3]){0, 1, 0}, &attrs);
}

tfl_tensor *tfl__layer_norm_grad(tfl_ctx *ctx, const tfl_tensor *dy, const tfl_tensor *x,
                                 const tfl_tensor *gamma, double epsilon)
{
    const tfl__op_id op = TFL_OP_LAYER_NORM_GRAD;
    const tfl_tensor *req[2] = {dy, x};
    if (!tfl__check_inputs(ctx, op, 2, req) || !tfl__autocast(ctx, op, 2, req)) return NULL;
    dy = req[0];
    x = req[1];
    if (!check_norm_x(ctx, op, x, epsilon, "features") || !check_dy(ctx, op, x, dy) ||
        (gamma && !check_param(ctx, op, x, gamma, "gamma")))
        return NULL;
    const tfl__layer_norm_attrs attrs = {epsilon};
    return run_norm(ctx, op, x, 3, (const tfl_tensor *[3]){dy, x, gamma},
                    (const double[3]){0, 0, 1}, &attrs);
}

tfl_tensor *tfl__layer_norm_param_grad(tfl_ctx *ctx, const tfl_tensor *dy, const tfl_tensor *x,
                                       double epsilon)
{
    const tfl__op_id op = TFL_OP_LAYER_NORM_PARAM_GRAD;
    const tfl_tensor *in[2] = {dy, x};
    if (!tfl__check_inputs(ctx, op, 2, in) || !tfl__autocast(ctx, op, 2, in)) return NULL;
    dy = in[0];
    x = in[1];
    if (!check_norm_x(ctx, op, x, epsilon, "features") || !check_dy(ctx, op, x, dy)) return NULL;
    const tfl__layer_norm_attrs attrs = {epsilon};
    const int64_t shape[2] = {2, x->shape[x->rank - 1]};
    return tfl__op_run(ctx, op, (tfl_dtype)x->dtype, 2, in, (tfl_dtype)x->dtype, 2, shape, &attrs);
}

/* ---- moments ------------------------------------------------------------------------------ */

tfl_status tfl_moments(tfl_ctx *ctx, const tfl_tensor *x, int naxes, const int *axes,
                       bool keepdims, tfl_tensor **mean, tfl_tensor **variance)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    if (mean) *mean = NULL;
    if (variance) *variance = NULL;
    const char *name = "Moments";
    TFL_CHECK(ctx, mean && variance, TFL_INVALID_ARGUMENT,
              "%s: mean and variance (where the results go) must not be NULL", name);
    if (!x)
        return ctx->err_code != TFL_OK
                   ? ctx->err_code
                   : tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "%s: x is NULL", name);
    TFL_CHECK(ctx, x->refs > 0, TFL_MISUSE, "%s: x is a tensor already released (use after "
              "release)", name);
    TFL_CHECK(ctx, x->ctx == ctx, TFL_MISUSE, "%s: x belongs to another context", name);
    if (TFL_UNLIKELY(x->flags & TFL_TENSOR_FLAG_UNINIT) && !tfl__check_readable(ctx, name, x))
        return ctx->err_code;
    const tfl_dtype dt = (tfl_dtype)x->dtype;
    if (!(TFL_MASK_FLOAT >> dt & 1u)) {
        char list[160];
        return tfl__set_error(
            ctx, TFL_INVALID_ARGUMENT, "%s: dtype %s is not supported; expected one of %s", name,
            tfl_dtype_name(dt), tfl__dtype_list(TFL_MASK_FLOAT, list, sizeof list));
    }
    TFL_CHECK(ctx, naxes >= 1 && axes, TFL_INVALID_ARGUMENT,
              "%s: axes must name at least one axis (got naxes %d%s)", name, naxes,
              naxes >= 1 ? " and axes NULL" : "");
    bool seen[TFL_MAX_RANK] = {false};
    int64_t shape[TFL_MAX_RANK];
    int rank = 0;
    for (int i = 0; i < naxes; i++) {
        int a = tfl__norm_axis(axes[i], x->rank);
        TFL_CHECK(ctx, a >= 0, TFL_INVALID_ARGUMENT, "%s: axis %d is out of range for rank %d",
                  name, axes[i], x->rank);
        TFL_CHECK(ctx, !seen[a], TFL_INVALID_ARGUMENT, "%s: axis %d is given twice", name,
                  axes[i]);
        seen[a] = true;
    }
    for (int d = 0; d < x->rank; d++)
        if (!seen[d]) shape[rank++] = x->shape[d];

    /* TensorFlow's nn_impl.moments: float16 in float32; the mean is kept with its axes so the
     * difference broadcasts. TensorFlow subtracts stop_gradient(mean): the same first-order
     * gradient (d variance / d mean = -2 mean(x - mean) = 0), but a wrong second order (the
     * gradient 2 (x - mean) / n then ignores that mean moves with x); here mean stays
     * connected, so Hessians through moments are right. Temporaries die with this frame. */
    TFL_TRY(tfl_frame_push(ctx));
    const bool half = (TFL_MASK_HALF >> dt & 1u) != 0;
    const tfl_tensor *y = half ? tfl_cast(ctx, x, TFL_DTYPE_FLOAT32) : x;
    tfl_tensor *m = tfl_reduce_mean(ctx, y, naxes, axes, true);
    tfl_tensor *d = tfl_sub(ctx, y, m);
    tfl_tensor *v = tfl_reduce_mean(ctx, tfl_mul(ctx, d, d), naxes, axes, true);
    if (!keepdims) {
        m = tfl_reshape(ctx, m, rank, shape);
        v = tfl_reshape(ctx, v, rank, shape);
    }
    if (half) {
        m = tfl_cast(ctx, m, dt);
        v = tfl_cast(ctx, v, dt);
    }
    tfl_status st = m && v ? TFL_OK : ctx->err_code != TFL_OK ? ctx->err_code : TFL_INTERNAL;
    if (st == TFL_OK) {
        tfl_keep(m);
        tfl_keep(v);
    }
    tfl_frame_pop(ctx);
    if (st != TFL_OK) return st;
    *mean = tfl__frame_adopt(ctx, m);
    *variance = tfl__frame_adopt(ctx, v);
    return TFL_OK;
}

/* ---- dropout ------------------------------------------------------------------------------ */

tfl_tensor *tfl__dropout_keyed(tfl_ctx *ctx, const tfl_tensor *x, double rate, uint64_t key)
{
    const tfl__op_id op = TFL_OP_DROPOUT;
    if (!tfl__check_inputs(ctx, op, 1, &x) || !tfl__check_dtype(ctx, op, (tfl_dtype)x->dtype))
        return NULL;
    const tfl__dropout_attrs attrs = {rate, key};
    return tfl__op_run(ctx, op, (tfl_dtype)x->dtype, 1, &x, (tfl_dtype)x->dtype, x->rank,
                       x->shape, &attrs);
}

tfl_tensor *tfl_dropout(tfl_ctx *ctx, const tfl_tensor *x, double rate, uint64_t seed)
{
    if (!ctx) return NULL;
    const tfl__op_id op = TFL_OP_DROPOUT;
    if (!tfl__check_inputs(ctx, op, 1, &x) || !tfl__check_dtype(ctx, op, (tfl_dtype)x->dtype))
        return NULL;
    TFL_CHECK_RET(ctx, rate >= 0 && rate < 1, NULL, TFL_INVALID_ARGUMENT,
                  "%s: rate must be a scalar tensor or a float in the range [0, 1), got %g",
                  tfl__op_defs[op].name, rate);
    if (rate == 0) return tfl_identity(ctx, x); /* no stream taken */
    return tfl__dropout_keyed(ctx, x, rate, tfl__rng_key(ctx, seed));
}
