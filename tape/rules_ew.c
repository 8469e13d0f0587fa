/*
 * tape/rules_ew.c: the backward rules of the activations with a derivative (the D and DA
 * lines of framework/ops/op_list.h's TFL_EW_LIST), generated, and the second derivative of
 * each, written with ordinary ops (TFL_D2), which is all a new one adds here.
 *
 * For y = f(x) the op's rule is dx = G(dy, x) = dy f'(x): one pass of the gradient op
 * (ID_GRAD, whose kernels call f' of framework/ops/ew_math.h on both devices), as
 * TensorFlow's SoftplusGrad and PyTorch's softplus_backward. G is differentiable again: for
 * z = G(dy, x), d dy = G(dz, x) (linear in dy) and d x = dz dy f''(x), with f'' from ops, so
 * a tape over the backward pass gives second and higher derivatives.
 */
#include "tape_internal.h"

#define CTX g->ctx
#define DY g->dy
#define X(i) g->in[i].saved
#define SQRT2_PI 0.79788456080286535588 /* sqrt(2/pi) */
#define INV_SQRT_2PI 0.39894228040143267794  /* 1/sqrt(2 pi) */

#define EW_GRAD_(id, fn, attrs)                                                                    \
    TFL_RULE(fn)                                                                                   \
    {                                                                                              \
        g->dx[0] = tfl__elementwise_grad(CTX, TFL_OP_##id##_GRAD, DY, X(0), attrs);                \
    }                                                                                              \
    TFL_RULE(fn##_grad)                                                                            \
    {                                                                                              \
        if (g->need[0])                                                                            \
            g->dx[0] = tfl__sum_to_input(                                                          \
                g, tfl__elementwise_grad(CTX, TFL_OP_##id##_GRAD, DY, X(1), attrs), 0);            \
        if (g->need[1])                                                                            \
            g->dx[1] = tfl__sum_to_input(                                                          \
                g, tfl_mul(CTX, tfl_mul(CTX, DY, X(0)), tfl__d2_##fn(g, X(1))), 1);                \
    }
#define EW_RULES_D(id, fn) EW_GRAD_(id, fn, NULL)
#define EW_RULES_DA(id, fn) EW_GRAD_(id, fn, &g->attrs->scalar)
#define EW_RULES_U(id, fn)
#define EW_RULES_UA(id, fn)
#define EW_RULES_B(id, fn)
#define EW_RULES_(ctx, id, nm, fn, kind, out, cpu, gpu, api, saves) EW_RULES_##kind(id, fn)
TFL_EW_LIST(EW_RULES_, ~)

/* ---- second derivatives f''(x) ------------------------------------------------------------- */

/* softplus' = sigmoid: s (1 - s) */
TFL_D2(softplus)
{
    tfl_tensor *s = tfl_sigmoid(CTX, x);
    return tfl_mul(CTX, s, tfl_sub(CTX, tfl__scalar_like(g, s, 1), s));
}

/* silu' = s (1 + x (1 - s)): s (1 - s) (2 + x (1 - 2 s)) */
TFL_D2(silu)
{
    tfl_tensor *s = tfl_sigmoid(CTX, x), *one = tfl__scalar_like(g, s, 1);
    tfl_tensor *ds = tfl_mul(CTX, s, tfl_sub(CTX, one, s));
    tfl_tensor *two = tfl__scalar_like(g, s, 2);
    tfl_tensor *k = tfl_add(CTX, two, tfl_mul(CTX, x, tfl_sub(CTX, one, tfl_mul(CTX, two, s))));
    return tfl_mul(CTX, ds, k);
}

/* elu' = 1 (x > 0) or a e^x: a e^x for x < 0, else 0 (at the kink, f' takes the left value a
 * and f'' the right one, 0, as PyTorch's elu_backward and its double backward) */
TFL_D2(elu)
{
    tfl_tensor *zero = tfl__scalar_like(g, x, 0);
    tfl_tensor *neg = tfl_mul(CTX, tfl__scalar_like(g, x, g->attrs->scalar.value), tfl_exp(CTX, x));
    return tfl_where(CTX, tfl_less(CTX, x, zero), neg, zero);
}

/* gelu' exact = Phi + x phi: phi (2 - x^2). tanh form, gelu' = (1 + t) / 2 + x s u' / 2 with
 * s = 1 - t^2, u' = c (1 + 3 k x^2), t' = s u': s u' + x s (u'' - 2 t u'^2) / 2, u'' = 6 c k x */
TFL_D2(gelu)
{
    const double c = SQRT2_PI, k = 0.044715;
    tfl_tensor *x2 = tfl_mul(CTX, x, x);
    if (g->attrs->scalar.value == 0.0) {
        tfl_tensor *phi = tfl_mul(CTX, tfl__scalar_like(g, x, INV_SQRT_2PI),
                                  tfl_exp(CTX, tfl_mul(CTX, x2, tfl__scalar_like(g, x, -0.5))));
        return tfl_mul(CTX, phi, tfl_sub(CTX, tfl__scalar_like(g, x, 2), x2));
    }
    tfl_tensor *one = tfl__scalar_like(g, x, 1);
    tfl_tensor *u = tfl_mul(CTX, tfl__scalar_like(g, x, c),
                            tfl_add(CTX, x, tfl_mul(CTX, tfl__scalar_like(g, x, k), tfl_mul(CTX, x2, x))));
    tfl_tensor *t = tfl_tanh(CTX, u);
    tfl_tensor *s = tfl_sub(CTX, one, tfl_mul(CTX, t, t));
    tfl_tensor *du = tfl_mul(CTX, tfl__scalar_like(g, x, c),
                             tfl_add(CTX, one, tfl_mul(CTX, tfl__scalar_like(g, x, 3 * k), x2)));
    tfl_tensor *ddu = tfl_mul(CTX, tfl__scalar_like(g, x, 6 * c * k), x);
    tfl_tensor *in = tfl_sub(CTX, ddu, tfl_mul(CTX, tfl_mul(CTX, tfl__scalar_like(g, x, 2), t),
                                               tfl_mul(CTX, du, du)));
    tfl_tensor *half_x_s = tfl_mul(CTX, tfl_mul(CTX, tfl__scalar_like(g, x, 0.5), x), s);
    return tfl_add(CTX, tfl_mul(CTX, s, du), tfl_mul(CTX, half_x_s, in));
}

/* hard_sigmoid is piecewise linear: f'' = 0 (a scalar; the rule broadcasts it) */
TFL_D2(hard_sigmoid) { return tfl__scalar_like(g, x, 0); }
