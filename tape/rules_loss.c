/*
 * tape/rules_loss.c: backward rules of the fused losses from logits, written with ordinary
 * ops (softmax, log_softmax, sigmoid, one_hot, arithmetic) so they are differentiable again.
 * The loss has the logits' shape without the class axis; its gradient dy is reshaped with
 * that axis kept as 1 and broadcast along it. Formulas are TensorFlow's (nn_grad.py).
 */
#include "tape_internal.h"

#define CTX g->ctx
#define DY g->dy
#define X(i) g->in[i].saved

/* dy with the logits' class axis back as size 1 */
static tfl_tensor *dy_along(const tfl__grad_call *g, int axis)
{
    const tfl__tape_in *r = &g->in[0];
    int64_t shape[TFL_MAX_RANK];
    memcpy(shape, r->shape, sizeof(int64_t) * r->rank);
    shape[axis] = 1;
    return tfl_reshape(CTX, DY, r->rank, shape);
}

/* loss = -sum(z log_softmax(x)): dx = dy (softmax(x) sum(z) - z), dz = -dy log_softmax(x) */
TFL_RULE(softmax_xent)
{
    int axis = g->attrs->axis.axis;
    const tfl_tensor *x = X(0);
    tfl_tensor *dy = dy_along(g, axis);
    if (g->need[0]) {
        const tfl_tensor *z = X(1);
        tfl_tensor *zsum = tfl_reduce_sum(CTX, z, 1, &axis, true);
        tfl_tensor *d = tfl_sub(CTX, tfl_mul(CTX, tfl_softmax(CTX, x, axis), zsum), z);
        g->dx[0] = tfl_mul(CTX, dy, d);
    }
    if (g->need[1]) g->dx[1] = tfl_neg(CTX, tfl_mul(CTX, dy, tfl_log_softmax(CTX, x, axis)));
}

/* loss = -log_softmax(x)[label]: dx = dy (softmax(x) - one_hot(label)), one fused op
 * (SparseSoftmaxCrossEntropyWithLogitsGrad); labels are integers */
TFL_RULE(sparse_softmax_xent) { g->dx[0] = tfl__sparse_softmax_xent_grad(CTX, X(0), X(1), DY); }

/* dx = v (s - h) per row, s = softmax(x), h = one_hot(label), v the loss's cotangent (input 2),
 * for the cotangent G:
 *   d x = v SoftmaxGrad(s, G) = v s (G - sum(G s));   d v = sum(G (s - h)) over the row */
TFL_RULE(sparse_softmax_xent_grad)
{
    const tfl__tape_in *r = &g->in[0];
    int last = r->rank - 1;
    tfl_tensor *s = tfl_softmax(CTX, X(0), last);
    if (g->need[0]) {
        int64_t shape[TFL_MAX_RANK];
        memcpy(shape, r->shape, sizeof(int64_t) * r->rank);
        shape[last] = 1;
        tfl_tensor *v = tfl_reshape(CTX, X(2), r->rank, shape);
        g->dx[0] = tfl_mul(CTX, v, tfl__softmax_grad(CTX, s, DY, last, 1.0));
    }
    if (g->need[2]) {
        tfl_tensor *hot = tfl_one_hot(CTX, X(1), r->shape[last], 1.0, 0.0, (tfl_dtype)r->dtype);
        g->dx[2] = tfl_reduce_sum(CTX, tfl_mul(CTX, DY, tfl_sub(CTX, s, hot)), 1, &last, false);
    }
}

/* loss = max(x, 0) - x z + log(1 + e^-|x|): dx = dy (sigmoid(x) - z), dz = -dy x */
TFL_RULE(sigmoid_xent)
{
    const tfl_tensor *x = X(0);
    if (g->need[0]) {
        tfl_tensor *d = tfl_sub(CTX, tfl_sigmoid(CTX, x), X(1));
        g->dx[0] = tfl__sum_to_input(g, tfl_mul(CTX, DY, d), 0);
    }
    if (g->need[1]) g->dx[1] = tfl__sum_to_input(g, tfl_neg(CTX, tfl_mul(CTX, DY, x)), 1);
}
