/*
 * tape/rules_conv.c: backward rules of the convolutions and pooling ops. Each family is
 * closed under differentiation, so every rule is made of ops that have rules again:
 *   Conv2D (x, w)             dx = BackpropInput(w, dy)       dw = BackpropFilter(x, dy)
 *   BackpropInput (w, dy)     dw = BackpropFilter(dz, dy)     ddy = Conv2D(dz, w)
 *   BackpropFilter (x, dy)    dx = BackpropInput(dz, dy)      ddy = Conv2D(x, dz)
 * (all three are bilinear, and each is the adjoint of the others in one operand; dz is the
 * gradient reaching the op's output);
 *   MaxPool (x)               dx = MaxPoolGrad(x, dy)
 *   MaxPoolGrad (x, dy)       dx = 0 (the argmax is locally constant)  ddy = MaxPoolGradGrad(x, dz)
 *   MaxPoolGradGrad (x, g)    dx = 0                                   dg = MaxPoolGrad(x, dz)
 *   AvgPool (x)               dx = AvgPoolGrad(dy)    AvgPoolGrad (dy)  ddy = AvgPool(dz)
 * The options come back from the op's tfl__window_attrs (TensorFlow's nn_grad.py does the
 * same with the op's attributes).
 */
#include "tape_internal.h"

#define CTX g->ctx
#define DY g->dy
#define X(i) g->in[i].saved

static tfl_conv2d_opts conv_opts(const tfl__grad_call *g)
{
    const tfl__window_attrs *a = &g->attrs->window;
    tfl_conv2d_opts o = {{(int)a->strides[0], (int)a->strides[1]},
                         {(int)a->dilations[0], (int)a->dilations[1]},
                         (tfl_padding)a->padding};
    return o;
}

static tfl_pool2d_opts pool_opts(const tfl__grad_call *g)
{
    const tfl__window_attrs *a = &g->attrs->window;
    tfl_pool2d_opts o = {{(int)a->ksize[0], (int)a->ksize[1]},
                         {(int)a->strides[0], (int)a->strides[1]},
                         (tfl_padding)a->padding};
    return o;
}

TFL_RULE(conv2d)
{
    tfl_conv2d_opts o = conv_opts(g);
    if (g->need[0]) g->dx[0] = tfl_conv2d_backprop_input(CTX, g->in[0].shape, X(1), DY, &o);
    if (g->need[1]) g->dx[1] = tfl_conv2d_backprop_filter(CTX, X(0), g->in[1].shape, DY, &o);
}

/* inputs: 0 the filter, 1 dy; the output has the conv's input shape */
TFL_RULE(conv2d_backprop_input)
{
    tfl_conv2d_opts o = conv_opts(g);
    if (g->need[0]) g->dx[0] = tfl_conv2d_backprop_filter(CTX, DY, g->in[0].shape, X(1), &o);
    if (g->need[1]) g->dx[1] = tfl_conv2d(CTX, DY, X(0), &o);
}

/* inputs: 0 the conv's input x, 1 dy; the output has the filter's shape */
TFL_RULE(conv2d_backprop_filter)
{
    tfl_conv2d_opts o = conv_opts(g);
    if (g->need[0]) g->dx[0] = tfl_conv2d_backprop_input(CTX, g->in[0].shape, DY, X(1), &o);
    if (g->need[1]) g->dx[1] = tfl_conv2d(CTX, X(0), DY, &o);
}

TFL_RULE(max_pool)
{
    tfl_pool2d_opts o = pool_opts(g);
    g->dx[0] = tfl__max_pool_grad(CTX, X(0), DY, &o);
}

/* inputs: 0 x, 1 dy */
TFL_RULE(max_pool_grad)
{
    tfl_pool2d_opts o = pool_opts(g);
    if (g->need[0]) g->dx[0] = tfl__zeros_like_input(g, 0);
    if (g->need[1]) g->dx[1] = tfl__max_pool_grad_grad(CTX, X(0), DY, &o);
}

/* inputs: 0 x, 1 g */
TFL_RULE(max_pool_grad_grad)
{
    tfl_pool2d_opts o = pool_opts(g);
    if (g->need[0]) g->dx[0] = tfl__zeros_like_input(g, 0);
    if (g->need[1]) g->dx[1] = tfl__max_pool_grad(CTX, X(0), DY, &o);
}

TFL_RULE(avg_pool)
{
    tfl_pool2d_opts o = pool_opts(g);
    g->dx[0] = tfl__avg_pool_grad(CTX, g->in[0].shape, DY, &o);
}

TFL_RULE(avg_pool_grad)
{
    tfl_pool2d_opts o = pool_opts(g);
    g->dx[0] = tfl_avg_pool2d(CTX, DY, &o);
}
