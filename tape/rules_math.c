/*
 * tape/rules_math.c: backward rules of the elementwise ops (arithmetic, unary math,
 * activations, cast, where). Binary rules sum their gradients back over broadcast axes
 * (tfl__sum_to_input). For complex inputs each rule multiplies by the conjugate of the local
 * derivative (TensorFlow's convention, see tape.h); for real dtypes tfl__cj is free.
 * Formulas are TensorFlow's (math_grad.py, nn_grad.py) unless said otherwise.
 */
#include "tape_internal.h"

#define TWO_SQRTPI 1.12837916709551257390 /* 2 / sqrt(pi) */

#define CTX g->ctx
#define DY g->dy
#define X(i) g->in[i].saved
#define Y g->out

TFL_RULE(identity) { g->dx[0] = (tfl_tensor *)DY; }

TFL_RULE(add)
{
    if (g->need[0]) g->dx[0] = tfl__sum_to_input(g, DY, 0);
    if (g->need[1]) g->dx[1] = tfl__sum_to_input(g, DY, 1);
}

TFL_RULE(sub)
{
    if (g->need[0]) g->dx[0] = tfl__sum_to_input(g, DY, 0);
    if (g->need[1]) g->dx[1] = tfl__sum_to_input(g, tfl_neg(CTX, DY), 1);
}

TFL_RULE(mul)
{
    if (g->need[0]) g->dx[0] = tfl__sum_to_input(g, tfl_mul(CTX, DY, tfl__cj(g, X(1))), 0);
    if (g->need[1]) g->dx[1] = tfl__sum_to_input(g, tfl_mul(CTX, DY, tfl__cj(g, X(0))), 1);
}

/* z = a / b: da = dy / conj(b), db = -dy * conj(z / b) */
TFL_RULE(div)
{
    if (g->need[0]) g->dx[0] = tfl__sum_to_input(g, tfl_div(CTX, DY, tfl__cj(g, X(1))), 0);
    if (g->need[1]) {
        tfl_tensor *q = tfl_div(CTX, Y, X(1));
        g->dx[1] = tfl__sum_to_input(g, tfl_neg(CTX, tfl_mul(CTX, DY, tfl__cj(g, q))), 1);
    }
}

/* z = x^y: dx = dy * conj(y x^(y-1)); dy = dy * conj(z log x), taken as 0 where x <= 0
 * (x == 0 for complex), as TensorFlow does */
TFL_RULE(pow)
{
    const tfl_tensor *x = X(0), *y = X(1);
    if (g->need[0]) {
        tfl_tensor *d = tfl_mul(CTX, y, tfl_pow(CTX, x, tfl_sub(CTX, y, tfl__scalar_like(g, y, 1))));
        g->dx[0] = tfl__sum_to_input(g, tfl_mul(CTX, DY, tfl__cj(g, d)), 0);
    }
    if (g->need[1]) {
        tfl_tensor *zero = tfl__scalar_like(g, x, 0), *one = tfl__scalar_like(g, x, 1);
        tfl_tensor *mask = tfl_dtype_is_complex((tfl_dtype)g->in[0].dtype)
                               ? tfl_not_equal(CTX, x, zero) : tfl_greater(CTX, x, zero);
        tfl_tensor *logx = tfl_where(CTX, mask, tfl_log(CTX, tfl_where(CTX, mask, x, one)), zero);
        tfl_tensor *d = tfl_mul(CTX, DY, tfl__cj(g, tfl_mul(CTX, Y, logx)));
        g->dx[1] = tfl__sum_to_input(g, d, 1);
    }
}

/* the gradient goes to x where mask holds (ties go to x, as TensorFlow), else to y */
static void select_rule(const tfl__grad_call *g, tfl_tensor *mask)
{
    tfl_tensor *zero = tfl__scalar_like(g, DY, 0);
    if (g->need[0]) g->dx[0] = tfl__sum_to_input(g, tfl_where(CTX, mask, DY, zero), 0);
    if (g->need[1]) g->dx[1] = tfl__sum_to_input(g, tfl_where(CTX, mask, zero, DY), 1);
}

TFL_RULE(maximum) { select_rule(g, tfl_greater_equal(CTX, X(0), X(1))); }
TFL_RULE(minimum) { select_rule(g, tfl_less_equal(CTX, X(0), X(1))); }

TFL_RULE(neg) { g->dx[0] = tfl_neg(CTX, DY); }
TFL_RULE(exp) { g->dx[0] = tfl_mul(CTX, DY, tfl__cj(g, Y)); }
TFL_RULE(log) { g->dx[0] = tfl_div(CTX, DY, tfl__cj(g, X(0))); }

/* y = sqrt x: dx = dy / conj(2y) */
TFL_RULE(sqrt)
{
    g->dx[0] = tfl_div(CTX, DY, tfl_mul(CTX, tfl__cj(g, Y), tfl__scalar_like(g, Y, 2)));
}

/* |x|: dx = dy * sign(x), and for complex x (real dy) dy * x / |x| (0 at 0) */
TFL_RULE(abs)
{
    const tfl_tensor *dy = DY;
    if (g->in[0].dtype != DY->dtype) dy = tfl_cast(CTX, DY, (tfl_dtype)g->in[0].dtype);
    g->dx[0] = tfl_mul(CTX, dy, tfl_sign(CTX, X(0)));
}

TFL_RULE(relu) { g->dx[0] = tfl_relu_grad(CTX, DY, Y); }

/* ReluGrad(dy, y) = dy [y > 0]: linear in dy (the same mask again); flat in y almost everywhere
 * (TensorFlow's gradient: zeros) */
TFL_RULE(relu_grad)
{
    if (g->need[0]) g->dx[0] = tfl__sum_to_input(g, tfl_relu_grad(CTX, DY, X(1)), 0);
    if (g->need[1]) g->dx[1] = tfl__zeros_like_input(g, 1);
}

TFL_RULE(leaky_relu)
{
    tfl_tensor *alpha = tfl__scalar_like(g, DY, g->attrs->scalar.value);
    tfl_tensor *pos = tfl_greater(CTX, X(0), tfl__scalar_like(g, X(0), 0));
    g->dx[0] = tfl_where(CTX, pos, DY, tfl_mul(CTX, DY, alpha));
}

/* y = sigmoid x: dx = dy y (1 - y) */
TFL_RULE(sigmoid)
{
    tfl_tensor *one_minus = tfl_sub(CTX, tfl__scalar_like(g, Y, 1), Y);
    g->dx[0] = tfl_mul(CTX, DY, tfl_mul(CTX, Y, one_minus));
}

/* y = tanh x: dx = dy (1 - y^2) */
TFL_RULE(tanh)
{
    g->dx[0] = tfl_mul(CTX, DY, tfl_sub(CTX, tfl__scalar_like(g, Y, 1), tfl_mul(CTX, Y, Y)));
}

/* y = softmax x: dx = y (dy - sum(dy y)) along the axis, one fused op (SoftmaxGrad) */
TFL_RULE(softmax) { g->dx[0] = tfl__softmax_grad(CTX, Y, DY, g->attrs->axis.axis, 1.0); }

/* y = softmax(scale x), causal or not: dx = scale y (dy - sum(dy y)); the excluded entries
 * have y = 0, so their dx is 0 */
TFL_RULE(attention_softmax)
{
    const tfl__softmax_attrs *a = &g->attrs->softmax;
    g->dx[0] = tfl__softmax_grad(CTX, Y, DY, a->axis, a->scale);
}

/* dx = s y (dv - r) with r = sum(dv y) (v for dy, the op's second input), for the cotangent g:
 *   d/dv = s y (g - sum(g y)) = SoftmaxGrad(y, g);   d/dy = s (g (dv - r) - dv sum(g y)) */
TFL_RULE(softmax_grad)
{
    const tfl__softmax_attrs *a = &g->attrs->softmax;
    const tfl_tensor *y = X(0);
    int axis = a->axis, naxes = y->rank ? 1 : 0;
    if (g->need[1]) g->dx[1] = tfl__softmax_grad(CTX, y, DY, axis, a->scale);
    if (g->need[0]) {
        const tfl_tensor *v = X(1);
        tfl_tensor *r = tfl_reduce_sum(CTX, tfl_mul(CTX, v, y), naxes, &axis, true);
        tfl_tensor *q = tfl_reduce_sum(CTX, tfl_mul(CTX, DY, y), naxes, &axis, true);
        tfl_tensor *t = tfl_sub(CTX, tfl_mul(CTX, DY, tfl_sub(CTX, v, r)), tfl_mul(CTX, v, q));
        g->dx[0] = tfl_mul(CTX, t, tfl__scalar_like(g, y, a->scale));
    }
}

/* y = log_softmax x: dx = dy - exp(y) sum(dy) along the axis */
TFL_RULE(log_softmax)
{
    int axis = g->attrs->axis.axis;
    tfl_tensor *s = tfl_reduce_sum(CTX, DY, Y->rank ? 1 : 0, &axis, true);
    g->dx[0] = tfl_sub(CTX, DY, tfl_mul(CTX, tfl_exp(CTX, Y), s));
}

/* d/dx erf x = 2 / sqrt(pi) e^(-x^2) */
TFL_RULE(erf)
{
    const tfl_tensor *x = X(0);
    tfl_tensor *e = tfl_exp(CTX, tfl_neg(CTX, tfl_mul(CTX, x, x)));
    g->dx[0] = tfl_mul(CTX, DY, tfl_mul(CTX, tfl__scalar_like(g, x, TWO_SQRTPI), e));
}

/* real sign is piecewise constant: zero (TensorFlow's rule). Complex sign s = z / |z| is not
 * (TensorFlow returns zeros there too, which is wrong): with a = |z|,
 * dz = (dy - s^2 conj(dy)) / (2a), and 0 at z = 0 */
TFL_RULE(sign)
{
    if (!tfl_dtype_is_complex((tfl_dtype)g->in[0].dtype)) {
        g->dx[0] = tfl__zeros_like_input(g, 0);
        return;
    }
    const tfl_tensor *z = X(0);
    tfl_tensor *s = tfl_sign(CTX, z);
    tfl_tensor *a = tfl_cast(CTX, tfl_abs(CTX, z), (tfl_dtype)g->in[0].dtype);
    tfl_tensor *zero = tfl__scalar_like(g, a, 0);
    tfl_tensor *num = tfl_sub(CTX, DY, tfl_mul(CTX, tfl_mul(CTX, s, s), tfl_conj(CTX, DY)));
    tfl_tensor *safe = tfl_where(CTX, tfl_equal(CTX, a, zero), tfl__scalar_like(g, a, 1), a);
    tfl_tensor *d = tfl_div(CTX, num, tfl_mul(CTX, safe, tfl__scalar_like(g, a, 2)));
    g->dx[0] = tfl_where(CTX, tfl_equal(CTX, a, zero), zero, d);
}
TFL_RULE(conj) { g->dx[0] = tfl_conj(CTX, DY); }

/* back to the input's dtype: complex -> real keeps the real part, real -> complex adds 0i */
TFL_RULE(cast) { g->dx[0] = tfl_cast(CTX, DY, (tfl_dtype)g->in[0].dtype); }

TFL_RULE(where)
{
    tfl_tensor *zero = tfl__scalar_like(g, DY, 0);
    const tfl_tensor *cond = X(0);
    if (g->need[1]) g->dx[1] = tfl__sum_to_input(g, tfl_where(CTX, cond, DY, zero), 1);
    if (g->need[2]) g->dx[2] = tfl__sum_to_input(g, tfl_where(CTX, cond, zero, DY), 2);
}
