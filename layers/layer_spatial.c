/*
 * layers/layer_spatial.c: the forward passes of the layers built on the convolution,
 * pooling, normalisation and dropout ops: Conv2D, MaxPool2D, AvgPool2D,
 * BatchNormalization (training and inference) and Dropout.
 */
#include "layers_internal.h"

#define NAME (l->name)
#define CTX (l->ctx)

tfl_tensor *tfl__conv_forward(tfl_layer *l, const tfl_tensor *x)
{
    const tfl_layer_spec *s = &l->spec;
    tfl_conv2d_opts o = {{s->strides[0], s->strides[1]}, {s->dilations[0], s->dilations[1]},
                         s->padding};
    tfl_tensor *y = tfl_conv2d(CTX, x, l->vars[0], &o);
    return s->no_bias ? y : tfl_add(CTX, y, l->vars[1]);
}

tfl_tensor *tfl__pool_forward(tfl_layer *l, const tfl_tensor *x)
{
    const tfl_layer_spec *s = &l->spec;
    tfl_pool2d_opts o = {{s->kernel_size[0], s->kernel_size[1]}, {s->strides[0], s->strides[1]},
                         s->padding};
    return s->kind == TFL_LAYER_MAX_POOL2D ? tfl_max_pool2d(CTX, x, &o)
                                           : tfl_avg_pool2d(CTX, x, &o);
}

/* A new mask every training call: a given seed is mixed with the call's number
 * (splitmix64's finaliser), seed 0 takes the context's next stream. */
tfl_tensor *tfl__dropout_forward(tfl_layer *l, const tfl_tensor *x)
{
    uint64_t seed = 0, n = l->calls++;
    if (l->spec.seed) {
        uint64_t z = l->spec.seed + 0x9E3779B97F4A7C15ull * (n + 1);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        seed = (z ^ (z >> 31)) | 1; /* never 0 */
    }
    return tfl_dropout(CTX, x, l->spec.rate, seed);
}

/* Training: normalise with the batch's moments over every axis but the last (one fused op),
 * then move the moving statistics toward them (constants for a tape: values are assigned).
 * Inference: the moving statistics. */
tfl_tensor *tfl__batch_norm_forward(tfl_layer *l, const tfl_tensor *x, bool training)
{
    const tfl_layer_spec *s = &l->spec;
    int k = 0;
    tfl_tensor *gamma = s->no_scale ? NULL : l->vars[k++];
    tfl_tensor *beta = s->no_center ? NULL : l->vars[k++];
    tfl_tensor *moving_mean = l->vars[k], *moving_var = l->vars[k + 1];
    if (!training) return tfl_batch_norm(CTX, x, moving_mean, moving_var, beta, gamma, s->epsilon);
    tfl_tensor *mean, *var;
    tfl_tensor *y = tfl_batch_norm_training(CTX, x, gamma, beta, s->epsilon, &mean, &var);
    if (!y) return NULL;
    /* moving = moving * momentum + batch * (1 - momentum); mean and var are constants */
    tfl_tensor *m = tfl_scalar_f32(CTX, (float)s->momentum);
    tfl_tensor *m1 = tfl_scalar_f32(CTX, (float)(1.0 - s->momentum));
    tfl_tensor *nm = tfl_add(CTX, tfl_mul(CTX, moving_mean, m), tfl_mul(CTX, mean, m1));
    tfl_tensor *nv = tfl_add(CTX, tfl_mul(CTX, moving_var, m), tfl_mul(CTX, var, m1));
    if (!nm || !nv || tfl_variable_assign(moving_mean, nm) != TFL_OK ||
        tfl_variable_assign(moving_var, nv) != TFL_OK)
        return NULL;
    return y;
}
