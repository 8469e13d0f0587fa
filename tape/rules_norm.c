/*
 * tape/rules_norm.c: backward rules of BatchNorm, BatchNormTraining and its gradient ops
 * (BatchNormParamGrad, BatchNormTrainingGrad), LayerNorm, LayerNormGrad and Dropout,
 * written with ordinary ops (LayerNorm's with its fused gradient op, which has a rule of its
 * own) so they are differentiable again. BatchNorm's parameters are (C) along x's last axis: their
 * gradients sum over every other axis. Dropout's rule drops dy with the forward's rate and
 * resolved key, so the mask is the forward's (the op is linear and self-adjoint).
 */
#include "tape_internal.h"

#define CTX g->ctx
#define DY g->dy
#define X(i) g->in[i].saved

/* t summed over every axis of x but the last: a (C) tensor (t itself for a rank-1 x) */
static tfl_tensor *sum_to_channels(const tfl__grad_call *g, const tfl_tensor *t)
{
    int axes[TFL_MAX_RANK], n = g->in[0].rank - 1;
    for (int d = 0; d < n; d++) axes[d] = d;
    return n ? tfl_reduce_sum(CTX, t, n, axes, false) : (tfl_tensor *)t;
}

/*
 * y = (x - m) s inv + o with inv = 1 / sqrt(v + eps):
 *   dx = dy s inv;  dm = -sum(dx);  dv = sum(dy (x - m)) s (-inv^3 / 2);
 *   do = sum(dy);   ds = sum(dy (x - m)) inv
 */
TFL_RULE(batch_norm)
{
    const bool ask_x = g->need[0] || g->need[1], ask_v = g->need[2] || g->need[4];
    const tfl_tensor *v = X(2), *s = X(4);
    tfl_tensor *inv = NULL;
    if (ask_x || ask_v) {
        tfl_tensor *eps = tfl__scalar_like(g, v, g->attrs->batch_norm.epsilon);
        tfl_tensor *root = tfl_sqrt(CTX, tfl_add(CTX, v, eps));
        inv = tfl_div(CTX, tfl__scalar_like(g, v, 1.0), root);
    }
    if (ask_x) {
        tfl_tensor *dx = tfl_mul(CTX, DY, tfl_mul(CTX, s, inv));
        if (g->need[0]) g->dx[0] = dx;
        if (g->need[1]) g->dx[1] = tfl_neg(CTX, sum_to_channels(g, dx));
    }
    if (ask_v) {
        tfl_tensor *t = sum_to_channels(g, tfl_mul(CTX, DY, tfl_sub(CTX, X(0), X(1))));
        if (g->need[2]) {
            tfl_tensor *cube = tfl_mul(CTX, inv, tfl_mul(CTX, inv, inv));
            tfl_tensor *k = tfl_mul(CTX, tfl_mul(CTX, s, cube), tfl__scalar_like(g, v, -0.5));
            g->dx[2] = tfl_mul(CTX, t, k);
        }
        if (g->need[4]) g->dx[4] = tfl_mul(CTX, t, inv);
    }
    if (g->need[3]) g->dx[3] = sum_to_channels(g, DY);
}

/* row r of a (2, C) tensor, as (C) */
static tfl_tensor *row_of(const tfl__grad_call *g, const tfl_tensor *t, int64_t r)
{
    const int64_t c = t->shape[1];
    return tfl_reshape(CTX, tfl_slice(CTX, t, (int64_t[]){r, 0}, (int64_t[]){1, c}), 1, &c);
}

/*
 * y = xhat gamma + beta, xhat = (x - mean) rstd over the last axis:
 *   dx = LayerNormGrad(dy, x, gamma);  (dgamma, dbeta) = LayerNormParamGrad(dy, x) =
 *   (sum(dy xhat), sum(dy)) in one pass
 */
TFL_RULE(layer_norm)
{
    const double eps = g->attrs->layer_norm.epsilon;
    if (g->need[0]) g->dx[0] = tfl__layer_norm_grad(CTX, DY, X(0), X(1), eps);
    if (!g->need[1] && !g->need[2]) return;
    tfl_tensor *s = tfl__layer_norm_param_grad(CTX, DY, X(0), eps);
    if (!s) return; /* the error kept */
    /* copies: gradients of their own (a recorded step's outputs never share memory) */
    if (g->need[1]) g->dx[1] = tfl_identity(CTX, row_of(g, s, 0));
    if (g->need[2]) g->dx[2] = tfl_identity(CTX, row_of(g, s, 1));
}

/*
 * s = LayerNormParamGrad(dy, x) = (sum(dy xhat), sum(dy)) over the rows; for the cotangent
 * V = (v0, v1), each (C):
 *   d dy = xhat v0 + v1 = LayerNorm(x, v0, v1);   d x = J (dy v0) = LayerNormGrad(dy v0, x, 1)
 * (J = d xhat / d x per row, symmetric).
 */
TFL_RULE(layer_norm_param_grad)
{
    const double eps = g->attrs->layer_norm.epsilon;
    tfl_tensor *v0 = row_of(g, DY, 0), *v1 = row_of(g, DY, 1);
    if (!v0 || !v1) return; /* the error kept (NULL would mean gamma 1, beta 0 below) */
    if (g->need[0]) g->dx[0] = tfl_layer_norm(CTX, X(1), v0, v1, eps);
    if (g->need[1])
        g->dx[1] = tfl__layer_norm_grad(CTX, tfl_mul(CTX, X(0), v0), X(1), NULL, eps);
}

/*
 * y = BatchNormTraining(x, moments, gamma, beta) = xhat gamma + beta, xhat normalised with
 * x's batch statistics (moments: constants for the tape; their dependence on x is in dx).
 * With s = BatchNormParamGrad(dy, x, moments) = (sum(dy xhat), sum(dy)):
 *   dx = BatchNormTrainingGrad(dy, x, moments, gamma, s);  dgamma = s[0];  dbeta = s[1]
 */
TFL_RULE(batch_norm_training)
{
    const double eps = g->attrs->batch_norm.epsilon;
    tfl_tensor *s = NULL;
    if (g->need[0] || g->need[2]) s = tfl__batch_norm_param_grad(CTX, DY, X(0), X(1), eps);
    if (g->need[0] && s)
        g->dx[0] = tfl__batch_norm_training_grad(CTX, DY, X(0), X(1), X(2), s, eps);
    /* copies: gradients of their own (a recorded step's outputs never share memory) */
    if (g->need[2] && s) g->dx[2] = tfl_identity(CTX, row_of(g, s, 0));
    if (g->need[3]) g->dx[3] = s ? tfl_identity(CTX, row_of(g, s, 1)) : sum_to_channels(g, DY);
}

/*
 * s = BatchNormParamGrad(dy, x, moments) = (sum(dy xhat), sum(dy)) per channel; for the
 * cotangent V = (v0, v1), each (C):
 *   d dy = xhat v0 + v1 = BatchNormTraining(x, moments, v0, v1);
 *   d x = J (dy v0) = BatchNormTrainingGrad(dy v0, x, moments, 1)
 * (J = d xhat / d x is symmetric).
 */
TFL_RULE(batch_norm_param_grad)
{
    const double eps = g->attrs->batch_norm.epsilon;
    tfl_tensor *v0 = row_of(g, DY, 0), *v1 = row_of(g, DY, 1);
    if (!v0 || !v1) return; /* the error kept (NULL would mean gamma 1, beta 0 below) */
    if (g->need[0]) g->dx[0] = tfl__batch_norm_apply(CTX, X(1), X(2), v0, v1, eps);
    if (g->need[1])
        g->dx[1] = tfl__batch_norm_training_grad(CTX, tfl_mul(CTX, X(0), v0), X(1), X(2), NULL,
                                                 NULL, eps);
}

/*
 * out = BatchNormTrainingGrad(dy, x, moments, gamma, sums) = gamma J dy = J (gamma dy), where
 * J = d xhat / d x acts on each channel's column of n = rows values and is symmetric:
 * LayerNormGrad's rule with the column in place of the row. For the cotangent v (DY here),
 * with u = J v = BatchNormTrainingGrad(v, x, moments, 1) and sums over the column:
 *   d dy = gamma u;  d gamma = sum(dy u);
 *   d x = -(rstd / n) (xhat sum(v out) + sum(v xhat) out + sum(gamma dy xhat) u)
 * rstd from tfl_moments of x, so that a higher order sees it move with x. The sums input
 * (dy's BatchNormParamGrad) is a function of dy and x already accounted for in those: its
 * own gradient is 0.
 */
TFL_RULE(batch_norm_training_grad)
{
    const double eps = g->attrs->batch_norm.epsilon;
    const tfl_tensor *dy = X(0), *x = X(1), *mo = X(2), *gamma = X(3), *v = DY;
    if (g->need[4]) g->dx[4] = tfl__zeros_like_input(g, 4);
    if (!g->need[0] && !g->need[1] && !g->need[3]) return;
    tfl_tensor *u = tfl__batch_norm_training_grad(CTX, v, x, mo, NULL, NULL, eps);
    if (g->need[0]) g->dx[0] = tfl_mul(CTX, u, gamma);
    if (g->need[3]) g->dx[3] = sum_to_channels(g, tfl_mul(CTX, dy, u));
    if (!g->need[1]) return;
    const int rank = g->in[1].rank;
    const int64_t c = g->in[1].shape[rank - 1];
    int64_t n = 1;
    for (int d = 0; d < rank - 1; d++) n *= g->in[1].shape[d]; /* <= x's elements */
    tfl_tensor *mean, *var;
    const tfl_tensor *cols = tfl_reshape(CTX, x, 2, (int64_t[]){n, c});
    if (!cols || tfl_moments(CTX, cols, 1, (int[]){0}, false, &mean, &var) != TFL_OK) return;
    tfl_tensor *rstd = tfl_div(CTX, tfl__scalar_like(g, var, 1.0),
                               tfl_sqrt(CTX, tfl_add(CTX, var, tfl__scalar_like(g, var, eps))));
    tfl_tensor *xhat = tfl__batch_norm_apply(CTX, x, mo, NULL, NULL, eps);
    tfl_tensor *s1 = sum_to_channels(g, tfl_mul(CTX, v, g->out));
    tfl_tensor *s2 = sum_to_channels(g, tfl_mul(CTX, v, xhat));
    tfl_tensor *b = sum_to_channels(g, tfl_mul(CTX, tfl_mul(CTX, dy, gamma), xhat));
    tfl_tensor *t = tfl_add(CTX, tfl_mul(CTX, xhat, s1), tfl_mul(CTX, s2, g->out));
    tfl_tensor *k = tfl_mul(CTX, rstd, tfl__scalar_like(g, rstd, -1.0 / (double)n));
    g->dx[1] = tfl_mul(CTX, k, tfl_add(CTX, t, tfl_mul(CTX, b, u)));
}

/* t summed over the last axis, kept as size 1 */
static tfl_tensor *row_sum(const tfl__grad_call *g, const tfl_tensor *t)
{
    return tfl_reduce_sum(CTX, t, 1, (int[]){-1}, true);
}

/*
 * out = LayerNormGrad(dy, x, gamma) = J (gamma dy), where J = d xhat / d x is symmetric,
 * J w = rstd (w - mean(w) - xhat mean(w xhat)) per row of n. For the cotangent v (DY here),
 * with u = J v = LayerNormGrad(v, x, 1):
 *   d dy = gamma u;  d gamma = sum(dy u);
 *   d x = -(rstd / n) (xhat sum(v out) + sum(v xhat) out) - rstd mean(gamma dy xhat) u
 * (the sums and the mean over the row; d rstd / d x = -rstd^2 xhat / n).
 */
TFL_RULE(layer_norm_grad)
{
    const double eps = g->attrs->layer_norm.epsilon;
    const tfl_tensor *dy = X(0), *x = X(1), *gamma = X(2), *v = DY;
    tfl_tensor *u = tfl__layer_norm_grad(CTX, v, x, NULL, eps);
    if (g->need[0]) g->dx[0] = tfl_mul(CTX, u, gamma);
    if (g->need[2]) g->dx[2] = sum_to_channels(g, tfl_mul(CTX, dy, u));
    if (!g->need[1]) return;
    const int rank = g->in[1].rank;
    const double n = (double)g->in[1].shape[rank - 1];
    tfl_tensor *mean, *var;
    if (tfl_moments(CTX, x, 1, (int[]){-1}, true, &mean, &var) != TFL_OK) return;
    tfl_tensor *rstd = tfl_div(CTX, tfl__scalar_like(g, var, 1.0),
                               tfl_sqrt(CTX, tfl_add(CTX, var, tfl__scalar_like(g, var, eps))));
    tfl_tensor *xhat = tfl_layer_norm(CTX, x, NULL, NULL, eps);
    tfl_tensor *s1 = row_sum(g, tfl_mul(CTX, v, g->out));
    tfl_tensor *s2 = row_sum(g, tfl_mul(CTX, v, xhat));
    tfl_tensor *b = row_sum(g, tfl_mul(CTX, tfl_mul(CTX, dy, gamma), xhat));
    tfl_tensor *t = tfl_add(CTX, tfl_mul(CTX, xhat, s1), tfl_mul(CTX, s2, g->out));
    /* dx = -(rstd / n) (t + b u): the mean of gamma dy xhat is b / n */
    tfl_tensor *k = tfl_mul(CTX, rstd, tfl__scalar_like(g, rstd, -1.0 / n));
    g->dx[1] = tfl_mul(CTX, k, tfl_add(CTX, t, tfl_mul(CTX, b, u)));
}

/* y = x mask / (1 - rate): dx = dy mask / (1 - rate), the same op on dy */
TFL_RULE(dropout)
{
    g->dx[0] = tfl__dropout_keyed(CTX, DY, g->attrs->dropout.rate, g->attrs->dropout.key);
}
