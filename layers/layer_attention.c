/*
 * layers/layer_attention.c: MultiHeadAttention as self-attention, composed of the ops the tape
 * differentiates (so it runs, forward and backward, on every device): with x (b, s, f), h
 * heads of size k,
 *     Q = x Wq + bq, K = x Wk + bk, V = x Wv + bv       (b, s, h, k) -> (b, h, s, k)
 *     A = softmax(Q K^T / sqrt(k)), causal: 0 above the diagonal           (b, h, s, s)
 *     y = (dropout(A) V  -> (b, s, h k)) Wo + bo                              (b, s, f)
 * Keras's layout and names: the projection kernels (f, h, k), their biases (h, k), the output
 * kernel (h, k, f) and bias (f). A is one op, tfl_attention_softmax: the same weights as
 * Keras's mask of -1e9 and PyTorch's of -inf.
 */
#include "layers_internal.h"

#include <math.h>

#define CTX (l->ctx)

/* the order of the variables in l->vars with biases: kernel then bias per projection */
enum { V_Q, V_K, V_V, V_O };

int tfl__attention_var_defs(const tfl_layer *l, int64_t f, const tfl_initializer *kinit,
                            const tfl_initializer *binit, tfl__var_def *d)
{
    const tfl_layer_spec *s = &l->spec;
    const int64_t h = s->num_heads;
    const int64_t k = s->key_dim ? s->key_dim : f / h; /* divides: layer_call.c */
    static const char *const names[3] = {"query", "key", "value"};
    char what[32];
    int n = 0;
    for (int p = 0; p < 3; p++) {
        snprintf(what, sizeof what, "%s/kernel", names[p]);
        n = tfl__var_def_add(d, n, what, 3, (int64_t[]){f, h, k}, kinit, true);
        snprintf(what, sizeof what, "%s/bias", names[p]);
        if (!s->no_bias) n = tfl__var_def_add(d, n, what, 2, (int64_t[]){h, k}, binit, true);
    }
    n = tfl__var_def_add(d, n, "attention_output/kernel", 3, (int64_t[]){h, k, f}, kinit, true);
    if (!s->no_bias) n = tfl__var_def_add(d, n, "attention_output/bias", 1, &f, binit, true);
    return n;
}

/* variable v (V_Q ...) of l: its kernel, or its bias (NULL without biases) */
static tfl_tensor *kernel_of(tfl_layer *l, int v)
{
    return l->vars[l->spec.no_bias ? v : 2 * v];
}
static tfl_tensor *bias_of(tfl_layer *l, int v)
{
    return l->spec.no_bias ? NULL : l->vars[2 * v + 1];
}

/* x2 (b s, f) projected by projection v into heads: (b, h, s, k) */
static tfl_tensor *heads(tfl_layer *l, const tfl_tensor *x2, int v, int64_t b, int64_t s)
{
    const int64_t h = l->spec.num_heads, k = l->key_dim;
    const int64_t f = tfl_tensor_shape(x2)[1];
    tfl_tensor *w = tfl_reshape(CTX, kernel_of(l, v), 2, (int64_t[]){f, h * k});
    tfl_tensor *bias = bias_of(l, v), *y = NULL;
    if (w && bias)
        y = tfl_matmul_bias(CTX, x2, w, tfl_reshape(CTX, bias, 1, (int64_t[]){h * k}), 0);
    else if (w)
        y = tfl_matmul(CTX, x2, w, 0);
    y = y ? tfl_reshape(CTX, y, 4, (int64_t[]){b, s, h, k}) : NULL;
    return y ? tfl_transpose(CTX, y, (int[]){0, 2, 1, 3}) : NULL;
}

tfl_tensor *tfl__attention_forward(tfl_layer *l, const tfl_tensor *x, bool training)
{
    const tfl_layer_spec *sp = &l->spec;
    const int64_t *shape = tfl_tensor_shape(x);
    const int64_t b = shape[0], s = shape[1], f = shape[2];
    const int64_t h = sp->num_heads, k = l->key_dim;
    tfl_tensor *x2 = tfl_reshape(CTX, x, 2, (int64_t[]){b * s, f});
    if (!x2) return NULL;
    tfl_tensor *q = heads(l, x2, V_Q, b, s), *kk = heads(l, x2, V_K, b, s);
    tfl_tensor *v = heads(l, x2, V_V, b, s);
    if (!q || !kk || !v) return NULL;
    tfl_tensor *scores = tfl_matmul(CTX, q, kk, TFL_TRANSPOSE_B); /* (b, h, s, s) */
    /* softmax(scores / sqrt(k)), causal or not, in one op (and one for its gradient) */
    tfl_tensor *a = scores ? tfl_attention_softmax(CTX, scores, 1.0 / sqrt((double)k), sp->causal)
                           : NULL;
    if (a && training && sp->rate > 0) a = tfl__dropout_forward(l, a);
    tfl_tensor *c = a ? tfl_matmul(CTX, a, v, 0) : NULL; /* (b, h, s, k) */
    c = c ? tfl_transpose(CTX, c, (int[]){0, 2, 1, 3}) : NULL;
    c = c ? tfl_reshape(CTX, c, 2, (int64_t[]){b * s, h * k}) : NULL;
    tfl_tensor *wo = tfl_reshape(CTX, kernel_of(l, V_O), 2, (int64_t[]){h * k, f});
    tfl_tensor *bo = bias_of(l, V_O), *y = NULL;
    if (c && wo) y = bo ? tfl_matmul_bias(CTX, c, wo, bo, 0) : tfl_matmul(CTX, c, wo, 0);
    return y ? tfl_reshape(CTX, y, 3, (int64_t[]){b, s, f}) : NULL;
}
