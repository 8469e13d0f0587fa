/*
 * layers/layer_call.c: each layer kind's output shape, variables and forward pass. Shapes
 * are batch first; the batch may be -1 (unknown) when only shapes are asked for. Variables
 * are float32, named "<layer>/<kernel|bias|...>", in this order per kind:
 *   Dense, Conv2D        kernel, bias (unless no_bias)
 *   BatchNormalization   gamma (unless no_scale), beta (unless no_center), moving_mean,
 *                        moving_variance
 *   Embedding            embeddings
 *   PositionEmbedding    embeddings (sequence_length, features)
 *   MultiHeadAttention   query/kernel, query/bias, key/kernel, key/bias, value/kernel,
 *                        value/bias, attention_output/kernel, attention_output/bias (no
 *                        biases with no_bias)
 *   LayerNormalization   gamma (unless no_scale), beta (unless no_center)
 */
#include "layers_internal.h"

#include <string.h>

#define NAME (l->name)
#define CTX (l->ctx)

/* TensorFlow's output size of a window op along one axis. */
static int64_t window_out(int64_t in, int k, int stride, int dilation, tfl_padding pad)
{
    if (in < 0) return -1;
    int64_t span = (int64_t)(k - 1) * dilation + 1;
    if (pad == TFL_PADDING_SAME) return in / stride + (in % stride != 0); /* no in + stride */
    return in >= span ? (in - span) / stride + 1 : 0;
}

/* The last input dimension, checked against what the layer was built for. */
static bool check_feature(tfl_layer *l, int rank, const int64_t *shape, int least_rank,
                          const char *what)
{
    char sb[128];
    TFL_CHECK_RET(CTX, rank >= least_rank, false, TFL_INVALID_ARGUMENT,
                  "%s: %s expects an input of rank %s%d (%s), got shape %s", NAME,
                  tfl_layer_kind_name(l->spec.kind), least_rank == 4 ? "" : ">= ", least_rank,
                  what, tfl__shape_str(rank, shape, sb, sizeof sb));
    int64_t f = shape[rank - 1];
    TFL_CHECK_RET(CTX, f >= 1, false, TFL_INVALID_ARGUMENT,
                  "%s: the input's last dimension must be known and >= 1, got shape %s", NAME,
                  tfl__shape_str(rank, shape, sb, sizeof sb));
    TFL_CHECK_RET(CTX, l->in_feature < 0 || f == l->in_feature, false, TFL_INVALID_ARGUMENT,
                  "%s: expected the input's last dimension %lld (the layer was built for it), "
                  "got %lld", NAME, (long long)l->in_feature, (long long)f);
    return true;
}

int tfl__layer_shape(tfl_layer *l, int rank, const int64_t *shape, int64_t *out)
{
    const tfl_layer_spec *s = &l->spec;
    char sb[128];
    switch (s->kind) {
    case TFL_LAYER_DENSE:
        if (!check_feature(l, rank, shape, 2, "batch, ..., features")) return -1;
        if (rank > 0) memcpy(out, shape, sizeof(int64_t) * rank);
        out[rank - 1] = s->units;
        return rank;
    case TFL_LAYER_CONV2D:
    case TFL_LAYER_MAX_POOL2D:
    case TFL_LAYER_AVG_POOL2D: {
        bool conv = s->kind == TFL_LAYER_CONV2D;
        TFL_CHECK_RET(CTX, rank == 4, -1, TFL_INVALID_ARGUMENT,
                      "%s: %s expects an input of rank 4 (batch, height, width, channels), got "
                      "shape %s", NAME, tfl_layer_kind_name(s->kind),
                      tfl__shape_str(rank, shape, sb, sizeof sb));
        if (conv && !check_feature(l, rank, shape, 4, "batch, height, width, channels"))
            return -1;
        out[0] = shape[0];
        for (int i = 0; i < 2; i++) {
            out[1 + i] = window_out(shape[1 + i], s->kernel_size[i], s->strides[i],
                                    conv ? s->dilations[i] : 1, s->padding);
            TFL_CHECK_RET(CTX, out[1 + i] != 0, -1, TFL_INVALID_ARGUMENT,
                          "%s: the %s window (%d, %d) does not fit the input %s with VALID "
                          "padding", NAME, tfl_layer_kind_name(s->kind), s->kernel_size[0],
                          s->kernel_size[1], tfl__shape_str(rank, shape, sb, sizeof sb));
        }
        out[3] = conv ? s->units : shape[3];
        return 4;
    }
    case TFL_LAYER_FLATTEN: {
        TFL_CHECK_RET(CTX, rank >= 1, -1, TFL_INVALID_ARGUMENT,
                      "%s: Flatten expects an input with a batch axis, got shape ()", NAME);
        int64_t n = 1;
        for (int d = 1; d < rank; d++) {
            TFL_CHECK_RET(CTX, shape[d] <= 0 || n <= 0 || n <= INT64_MAX / shape[d], -1,
                          TFL_INVALID_ARGUMENT, "%s: an example of shape %s has too many "
                          "elements", NAME, tfl__shape_str(rank, shape, sb, sizeof sb));
            n = shape[d] < 0 || n < 0 ? -1 : n * shape[d];
        }
        out[0] = shape[0];
        out[1] = n;
        return 2;
    }
    case TFL_LAYER_RESHAPE: {
        TFL_CHECK_RET(CTX, rank >= 1, -1, TFL_INVALID_ARGUMENT,
                      "%s: Reshape expects an input with a batch axis, got shape ()", NAME);
        int64_t have = 1, want = 1;
        int unknown = -1;
        bool known = true; /* every input dimension after the batch is known */
        for (int d = 1; d < rank; d++) {
            known = known && shape[d] >= 0;
            TFL_CHECK_RET(CTX, !known || shape[d] == 0 || have <= INT64_MAX / shape[d], -1,
                          TFL_INVALID_ARGUMENT, "%s: an example of shape %s has too many "
                          "elements", NAME, tfl__shape_str(rank, shape, sb, sizeof sb));
            if (known) have *= shape[d];
        }
        for (int i = 0; i < s->target_rank; i++) {
            if (s->target_shape[i] == -1) unknown = i;
            else if (want <= INT64_MAX / s->target_shape[i]) want *= s->target_shape[i];
            else want = -1; /* more than any input can hold */
        }
        out[0] = shape[0];
        memcpy(out + 1, s->target_shape, sizeof(int64_t) * s->target_rank);
        if (!known) return s->target_rank + 1; /* shapes only: a -1 target stays unknown */
        if (unknown >= 0 && want > 0 && have % want == 0) out[1 + unknown] = have / want;
        TFL_CHECK_RET(CTX, (unknown >= 0 && want > 0 && have % want == 0) ||
                               (unknown < 0 && want == have), -1, TFL_INVALID_ARGUMENT,
                      "%s: cannot reshape an input of shape %s (%lld per example) to the target "
                      "shape", NAME, tfl__shape_str(rank, shape, sb, sizeof sb), (long long)have);
        return s->target_rank + 1;
    }
    case TFL_LAYER_BATCH_NORM:
        if (!check_feature(l, rank, shape, 2, "batch, ..., channels")) return -1;
        if (rank > 0) memcpy(out, shape, sizeof(int64_t) * rank);
        return rank;
    case TFL_LAYER_LAYER_NORM:
        if (!check_feature(l, rank, shape, 2, "batch, ..., features")) return -1;
        /* fall through */
    case TFL_LAYER_DROPOUT:
    case TFL_LAYER_ACTIVATION:
        if (rank > 0) memcpy(out, shape, sizeof(int64_t) * rank);
        return rank;
    case TFL_LAYER_MULTI_HEAD_ATTENTION:
        TFL_CHECK_RET(CTX, rank == 3, -1, TFL_INVALID_ARGUMENT,
                      "%s: MultiHeadAttention expects an input of rank 3 (batch, sequence, "
                      "features), got shape %s", NAME, tfl__shape_str(rank, shape, sb, sizeof sb));
        if (!check_feature(l, rank, shape, 3, "batch, sequence, features")) return -1;
        TFL_CHECK_RET(CTX, s->key_dim || shape[2] % s->num_heads == 0, -1, TFL_INVALID_ARGUMENT,
                      "%s: num_heads %d does not divide the input's %lld features (each head "
                      "takes features / num_heads); give key_dim", NAME, s->num_heads,
                      (long long)shape[2]);
        memcpy(out, shape, sizeof(int64_t) * 3);
        return 3;
    case TFL_LAYER_POSITION_EMBEDDING:
        if (!check_feature(l, rank, shape, 3, "batch, sequence, features")) return -1;
        TFL_CHECK_RET(CTX, shape[rank - 2] <= s->sequence_length, -1, TFL_INVALID_ARGUMENT,
                      "%s: a sequence of %lld is longer than the layer's sequence_length %lld",
                      NAME, (long long)shape[rank - 2], (long long)s->sequence_length);
        if (rank > 0) memcpy(out, shape, sizeof(int64_t) * rank);
        return rank;
    case TFL_LAYER_GLOBAL_AVG_POOL2D:
        TFL_CHECK_RET(CTX, rank == 4, -1, TFL_INVALID_ARGUMENT,
                      "%s: GlobalAveragePooling2D expects an input of rank 4 (batch, height, "
                      "width, channels), got shape %s", NAME,
                      tfl__shape_str(rank, shape, sb, sizeof sb));
        TFL_CHECK_RET(CTX, shape[1] != 0 && shape[2] != 0, -1, TFL_INVALID_ARGUMENT,
                      "%s: GlobalAveragePooling2D needs height and width >= 1, got shape %s",
                      NAME, tfl__shape_str(rank, shape, sb, sizeof sb));
        out[0] = shape[0];
        out[1] = shape[3];
        return 2;
    case TFL_LAYER_EMBEDDING:
        TFL_CHECK_RET(CTX, rank < TFL_MAX_RANK, -1, TFL_INVALID_ARGUMENT,
                      "%s: Embedding's input rank must be below %d, got %d", NAME, TFL_MAX_RANK,
                      rank);
        if (rank > 0) memcpy(out, shape, sizeof(int64_t) * rank);
        out[rank] = s->units;
        return rank + 1;
    case TFL_LAYER_ADD:
    case TFL_LAYER_CONCATENATE:
    case TFL_LAYER_MULTIPLY:
        TFL_CHECK_RET(CTX, false, -1, TFL_INVALID_ARGUMENT, "%s: %s merges 2 or more inputs: "
                      "call it with tfl_layer_call_n (or tfl_layer_output_shape_n)", NAME,
                      tfl_layer_kind_name(s->kind));
        return -1;
    default:
        return -1;
    }
}

/* ---- variables ------------------------------------------------------------------------------ */

/* the initializers a kind's variables take, by role */
enum { I_KERNEL, I_BIAS, I_ONES, I_ZEROS, I_EMBEDDINGS, I_COUNT };

/* The variables of l's kind for inputs of f features, in order (at most TFL__LAYER_VARS);
 * with in[] NULL entries, the shapes alone. */
static int var_defs(const tfl_layer *l, int64_t f, const tfl_initializer *const *in,
                    tfl__var_def *d)
{
    const tfl_layer_spec *s = &l->spec;
    int n = 0;
    switch (s->kind) {
    case TFL_LAYER_DENSE:
    case TFL_LAYER_CONV2D:
        n = s->kind == TFL_LAYER_DENSE
                ? tfl__var_def_add(d, n, "kernel", 2, (int64_t[]){f, s->units}, in[I_KERNEL], true)
                : tfl__var_def_add(d, n, "kernel", 4,
                                   (int64_t[]){s->kernel_size[0], s->kernel_size[1], f, s->units},
                                   in[I_KERNEL], true);
        if (!s->no_bias) n = tfl__var_def_add(d, n, "bias", 1, &s->units, in[I_BIAS], true);
        return n;
    case TFL_LAYER_BATCH_NORM:
    case TFL_LAYER_LAYER_NORM:
        if (!s->no_scale) n = tfl__var_def_add(d, n, "gamma", 1, &f, in[I_ONES], true);
        if (!s->no_center) n = tfl__var_def_add(d, n, "beta", 1, &f, in[I_ZEROS], true);
        if (s->kind == TFL_LAYER_LAYER_NORM) return n;
        n = tfl__var_def_add(d, n, "moving_mean", 1, &f, in[I_ZEROS], false);
        return tfl__var_def_add(d, n, "moving_variance", 1, &f, in[I_ONES], false);
    case TFL_LAYER_MULTI_HEAD_ATTENTION:
        return tfl__attention_var_defs(l, f, in[I_KERNEL], in[I_BIAS], d);
    case TFL_LAYER_POSITION_EMBEDDING:
        return tfl__var_def_add(d, n, "embeddings", 2, (int64_t[]){s->sequence_length, f},
                                in[I_KERNEL], true);
    case TFL_LAYER_EMBEDDING:
        return tfl__var_def_add(d, n, "embeddings", 2, (int64_t[]){s->input_dim, s->units},
                                in[I_EMBEDDINGS], true);
    default:
        return 0;
    }
}

/* Whether the kind's variables are sized by the input's last dimension (then l->in_feature). */
static bool feature_sized(tfl_layer_kind kind)
{
    return kind == TFL_LAYER_DENSE || kind == TFL_LAYER_CONV2D || kind == TFL_LAYER_BATCH_NORM ||
           kind == TFL_LAYER_LAYER_NORM || kind == TFL_LAYER_MULTI_HEAD_ATTENTION ||
           kind == TFL_LAYER_POSITION_EMBEDDING;
}

bool tfl__layer_vars_fit(tfl_layer *l, int rank, const int64_t *shape)
{
    const tfl_initializer *none[I_COUNT] = {0};
    tfl__var_def d[TFL__LAYER_VARS];
    int n = var_defs(l, rank > 0 ? shape[rank - 1] : 0, none, d);
    for (int i = 0; i < n; i++) {
        char what[1024];
        snprintf(what, sizeof what, "%s: variable '%.*s/%s'", NAME, TFL__NAME_MAX, NAME,
                 d[i].what);
        if (!tfl__check_new(CTX, what, TFL_DTYPE_FLOAT32, d[i].rank, d[i].shape)) return false;
    }
    return true;
}

tfl_status tfl__layer_make_vars(tfl_layer *l, int rank, const int64_t *shape)
{
    const tfl_layer_spec *s = &l->spec;
    tfl_initializer glorot = tfl_init_glorot_uniform(0), zeros = tfl_init_zeros(),
                    ones = tfl_init_ones(), emb = tfl_init_random_uniform(-0.05, 0.05, 0);
    const tfl_initializer *in[I_COUNT] = {
        [I_KERNEL] = s->kernel_init ? s->kernel_init : &glorot,
        [I_BIAS] = s->bias_init ? s->bias_init : &zeros,
        [I_ONES] = &ones,
        [I_ZEROS] = &zeros,
        [I_EMBEDDINGS] = s->kernel_init ? s->kernel_init : &emb,
    };
    int64_t f = rank > 0 ? shape[rank - 1] : 0;
    tfl__var_def d[TFL__LAYER_VARS];
    int n = var_defs(l, f, in, d);
    for (int i = 0; i < n; i++) {
        if (!tfl__layer_add_var(l, d[i].what, d[i].rank, d[i].shape, d[i].init, d[i].trainable)) {
            l->in_feature = -1;
            return tfl_ctx_status(CTX);
        }
    }
    if (feature_sized(s->kind)) l->in_feature = f;
    if (s->kind == TFL_LAYER_MULTI_HEAD_ATTENTION) l->key_dim = d[0].shape[2]; /* (f, h, k) */
    return TFL_OK;
}

/* ---- forward ------------------------------------------------------------------------------------ */

/* the activations: each one's name (Keras's, as configs spell it) and op */
static tfl_tensor *softmax_last(tfl_ctx *ctx, const tfl_tensor *x)
{
    return tfl_softmax(ctx, x, -1);
}
static tfl_tensor *gelu_exact(tfl_ctx *ctx, const tfl_tensor *x)
{
    return tfl_gelu(ctx, x, false);
}
static tfl_tensor *elu_1(tfl_ctx *ctx, const tfl_tensor *x)
{
    return tfl_elu(ctx, x, 1.0);
}

/* one line per activation */
/* clang-format off */
static const struct {
    const char *name;
    tfl_tensor *(*fn)(tfl_ctx *ctx, const tfl_tensor *x); /* NULL: the identity */
} acts[TFL_ACT_END] = {
    [TFL_ACT_LINEAR] = {"linear", NULL},
    [TFL_ACT_RELU] = {"relu", tfl_relu},
    [TFL_ACT_SIGMOID] = {"sigmoid", tfl_sigmoid},
    [TFL_ACT_TANH] = {"tanh", tfl_tanh},
    [TFL_ACT_SOFTMAX] = {"softmax", softmax_last},
    [TFL_ACT_GELU] = {"gelu", gelu_exact},
    [TFL_ACT_SOFTPLUS] = {"softplus", tfl_softplus},
    [TFL_ACT_SILU] = {"silu", tfl_silu},
    [TFL_ACT_ELU] = {"elu", elu_1},
    [TFL_ACT_HARD_SIGMOID] = {"hard_sigmoid", tfl_hard_sigmoid},
};
/* clang-format on */

const char *tfl_activation_name(tfl_activation act)
{
    return (unsigned)act < TFL_ACT_END ? acts[act].name : "?";
}

tfl_tensor *tfl__activate(tfl_ctx *ctx, tfl_activation act, const tfl_tensor *x)
{
    if ((unsigned)act >= TFL_ACT_END || !acts[act].fn) return (tfl_tensor *)x;
    return acts[act].fn(ctx, x);
}

static tfl_tensor *dense(tfl_layer *l, const tfl_tensor *x)
{
    int rank = tfl_tensor_rank(x);
    const int64_t *shape = tfl_tensor_shape(x);
    const tfl_tensor *x2 = x;
    if (rank > 2) x2 = tfl_reshape(CTX, x, 2, (int64_t[]){-1, shape[rank - 1]});
    /* the bias in the product's op (FusedMatMul): the same numbers, one pass less */
    tfl_tensor *y = l->spec.no_bias ? tfl_matmul(CTX, x2, l->vars[0], 0)
                                    : tfl_matmul_bias(CTX, x2, l->vars[0], l->vars[1], 0);
    if (y && rank > 2) {
        int64_t out[TFL_MAX_RANK];
        if (rank > 0) memcpy(out, shape, sizeof(int64_t) * rank);
        out[rank - 1] = l->spec.units;
        y = tfl_reshape(CTX, y, rank, out);
    }
    return y;
}

bool tfl__layer_check_dtype(tfl_layer *l, const tfl_tensor *x)
{
    const tfl_layer_spec *s = &l->spec;
    tfl_dtype dt = tfl_tensor_dtype(x);
    if (s->kind == TFL_LAYER_EMBEDDING)
        TFL_CHECK_RET(CTX, dt == TFL_DTYPE_INT32 || dt == TFL_DTYPE_INT64, false,
                      TFL_INVALID_ARGUMENT, "%s: Embedding expects int32 or int64 ids, got %s",
                      NAME, tfl_dtype_name(dt));
    else
        TFL_CHECK_RET(CTX, tfl_dtype_is_floating(dt) || s->kind == TFL_LAYER_FLATTEN ||
                               s->kind == TFL_LAYER_RESHAPE, false, TFL_INVALID_ARGUMENT,
                      "%s: %s expects a floating input, got %s", NAME,
                      tfl_layer_kind_name(s->kind), tfl_dtype_name(dt));
    return true;
}

/* (x - mean) / sqrt(variance + epsilon) * gamma + beta over the last axis: one fused op
 * (LayerNorm), with a fused gradient */
static tfl_tensor *layer_norm(tfl_layer *l, const tfl_tensor *x)
{
    const tfl_layer_spec *s = &l->spec;
    int k = 0;
    tfl_tensor *gamma = s->no_scale ? NULL : l->vars[k++];
    tfl_tensor *beta = s->no_center ? NULL : l->vars[k++];
    return tfl_layer_norm(CTX, x, gamma, beta, s->epsilon);
}

/* x is in the 16-bit dtype of the context's mixed precision policy, on a device the policy
 * applies to (not the CPU): the layer's ops take it as it is (their own autocast decides what
 * runs in float32) */
static bool policy_dtype(tfl_ctx *ctx, const tfl_tensor *x)
{
    return tfl_tensor_dtype(x) == tfl_precision_half_dtype(tfl_ctx_precision(ctx)) &&
           strncmp(tfl_tensor_device(x), "CPU:", 4) != 0;
}

tfl_tensor *tfl__layer_forward(tfl_layer *l, const tfl_tensor *x, bool training)
{
    const tfl_layer_spec *s = &l->spec;
    if (s->kind == TFL_LAYER_EMBEDDING) return tfl_gather(CTX, l->vars[0], x, 0);
    bool weighted = s->kind == TFL_LAYER_DENSE || s->kind == TFL_LAYER_CONV2D ||
                    s->kind == TFL_LAYER_BATCH_NORM || s->kind == TFL_LAYER_LAYER_NORM ||
                    s->kind == TFL_LAYER_POSITION_EMBEDDING ||
                    s->kind == TFL_LAYER_MULTI_HEAD_ATTENTION;
    if (weighted && tfl_tensor_dtype(x) != TFL_DTYPE_FLOAT32 && !policy_dtype(CTX, x))
        x = tfl_cast(CTX, x, TFL_DTYPE_FLOAT32); /* Keras's autocast */
    if (!x) return NULL;
    int rank = tfl_tensor_rank(x);
    int64_t out[TFL_MAX_RANK];
    switch (s->kind) {
    case TFL_LAYER_DENSE:
        return tfl__activate(CTX, s->activation, dense(l, x));
    case TFL_LAYER_CONV2D:
        return tfl__activate(CTX, s->activation, tfl__conv_forward(l, x));
    case TFL_LAYER_MAX_POOL2D:
    case TFL_LAYER_AVG_POOL2D:
        return tfl__pool_forward(l, x);
    case TFL_LAYER_FLATTEN:
    case TFL_LAYER_RESHAPE: {
        int r = tfl__layer_shape(l, rank, tfl_tensor_shape(x), out);
        return r < 0 ? NULL : tfl_reshape(CTX, x, r, out);
    }
    case TFL_LAYER_DROPOUT:
        return training ? tfl__dropout_forward(l, x) : (tfl_tensor *)x;
    case TFL_LAYER_BATCH_NORM:
        return tfl__batch_norm_forward(l, x, training);
    case TFL_LAYER_ACTIVATION:
        return tfl__activate(CTX, s->activation, x);
    case TFL_LAYER_LAYER_NORM:
        return layer_norm(l, x);
    case TFL_LAYER_GLOBAL_AVG_POOL2D:
        return tfl_reduce_mean(CTX, x, 2, (int[]){1, 2}, false);
    case TFL_LAYER_MULTI_HEAD_ATTENTION:
        if (tfl__layer_shape(l, rank, tfl_tensor_shape(x), out) < 0) return NULL;
        return tfl__attention_forward(l, x, training);
    case TFL_LAYER_POSITION_EMBEDDING: { /* x + the table's first seq rows, over the batch */
        int64_t seq = tfl_tensor_shape(x)[rank - 2];
        if (tfl__layer_shape(l, rank, tfl_tensor_shape(x), out) < 0) return NULL;
        tfl_tensor *rows = tfl_slice(CTX, l->vars[0], (int64_t[]){0, 0}, (int64_t[]){seq, -1});
        return rows ? tfl_add(CTX, x, rows) : NULL;
    }
    default:
        return NULL;
    }
}
