/*
 * tape/rules_norm.c: backward rules of BatchNorm and Dropout, written with ordinary ops so
 * they are differentiable again. BatchNorm's parameters are (C) along x's last axis: their
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

/* y = x mask / (1 - rate): dx = dy mask / (1 - rate), the same op on dy */
TFL_RULE(dropout)
{
    g->dx[0] = tfl__dropout_keyed(CTX, DY, g->attrs->dropout.rate, g->attrs->dropout.key);
}
