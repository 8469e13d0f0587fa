/*
 * tapeflow/layers.h: layers (Keras's): Dense, Conv2D, MaxPool2D, AvgPool2D, Flatten,
 * Reshape, Dropout, BatchNormalization, Activation, Embedding, LayerNormalization,
 * GlobalAveragePooling2D, PositionEmbedding, MultiHeadAttention, and the merges Add,
 * Concatenate and Multiply (layers of several inputs, for graph models).
 *
 * A layer is described by a tfl_layer_spec (all-zero fields mean Keras's defaults) and made
 * with tfl_layer_new; most users add specs to a sequential model (<tapeflow/model.h>):
 *
 *     tfl_layer *d = tfl_layer_new(ctx, &(tfl_layer_spec){
 *         .kind = TFL_LAYER_DENSE, .units = 256, .activation = TFL_ACT_RELU});
 *     tfl_tensor *y = tfl_layer_call(d, x, true);       // makes dense/kernel, dense/bias
 *
 * Variables are made on the first call, from the input's last dimensions, as float32
 * variables on the current device, named "<layer name>/<kernel|bias|gamma|beta|
 * moving_mean|moving_variance|embeddings>" (prefixed by the open name scopes, as any
 * variable). Layer names are unique per context: a spec without a name gets its kind's
 * name ("dense", "conv2d", "max_pooling2d", "average_pooling2d", "flatten", "reshape",
 * "dropout", "batch_normalization", "activation", "embedding", "layer_normalization",
 * "global_average_pooling2d", "position_embedding", "multi_head_attention", "add",
 * "concatenate", "multiply") and then "_1", "_2", ...
 * while that name is taken by a live layer; a spec naming a taken name is an error.
 * Trainable variables join the trainable collection; BatchNormalization's moving mean and
 * variance are not trainable. Dense, Conv2D, BatchNormalization and LayerNormalization
 * compute in float32: a float16, bfloat16 or float64 input is cast first (Keras's autocast).
 *
 * Defaults (Keras 3):
 *   Dense        kernel glorot_uniform (fan_in, units), bias zeros (units), y = act(x·W + b)
 *                over x's last axis (any rank >= 2).
 *   Conv2D       NHWC input, HWIO kernel glorot_uniform (kh, kw, cin, filters), bias zeros,
 *                strides 1, padding VALID, dilations 1 (see tfl_conv2d in <tapeflow/ops.h>).
 *   MaxPool2D / AvgPool2D  pool 2x2, strides = pool size, padding VALID.
 *   Flatten      (batch, ...) -> (batch, product of the rest).
 *   Reshape      (batch, ...) -> (batch, target_shape...), one -1 allowed.
 *   Dropout      training: tfl_dropout(x, rate, seed) (a new mask every call: the seed is
 *                mixed with the call's number; seed 0 takes the context's streams);
 *                inference: x.
 *   BatchNormalization  over the last axis; gamma ones, beta zeros, moving_mean zeros,
 *                moving_variance ones; momentum 0.99, epsilon 1e-3. Training: normalises
 *                with the batch's mean and (biased) variance and then updates
 *                moving = moving·momentum + batch·(1 − momentum); inference: normalises with
 *                the moving statistics. (A momentum of exactly 0 cannot be asked for: 0
 *                means the default.)
 *   Activation   act(x).
 *   Embedding    embeddings uniform(−0.05, 0.05) (input_dim, units); integer input of any
 *                shape -> input shape + (units); ids outside [0, input_dim) are an error.
 *   PositionEmbedding  learned positions (KerasHub's PositionEmbedding, added to its input):
 *                embeddings glorot_uniform (sequence_length, features); input (batch, seq,
 *                features) with seq <= sequence_length -> input + embeddings[0:seq].
 *   MultiHeadAttention  self-attention (Keras's MultiHeadAttention called with query = value =
 *                key = x): kernels glorot_uniform, biases zeros, named query/, key/, value/
 *                (features, heads, key_dim) and attention_output/ (heads, key_dim, features);
 *                scores scaled by 1/sqrt(key_dim), causal (optional) masks the future with
 *                -1e9 before the softmax, dropout `rate` on the weights while training;
 *                input (batch, seq, features) -> the same shape.
 *   LayerNormalization  over the last axis of each example (rank >= 2): gamma ones, beta
 *                zeros, both (features,) and trainable; epsilon 1e-3 (Keras's; PyTorch's
 *                nn.LayerNorm takes 1e-5); y = (x − mean) / sqrt(variance + epsilon)·gamma
 *                + beta with the (biased) mean and variance of the last axis; the same in
 *                training and inference. Options epsilon, no_center, no_scale (no momentum).
 *   GlobalAveragePooling2D  NHWC (batch, height, width, channels) -> (batch, channels), the
 *                mean over height and width. No options.
 *   Add, Multiply  2 or more inputs of one shape and dtype -> their sum / product, element by
 *                element (no broadcasting). No options.
 *   Concatenate  2 or more inputs of one rank and dtype, equal in every axis but `axis`
 *                (default -1, the last; never the batch axis) -> joined along it.
 * The merges are called with tfl_layer_call_n; every other kind takes one input.
 *
 * Layers belong to their context: those still alive at tfl_ctx_free are freed with it.
 */
#ifndef TAPEFLOW_LAYERS_H
#define TAPEFLOW_LAYERS_H

#include <tapeflow/base.h>
#include <tapeflow/initializer.h>
#include <tapeflow/ops.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tfl_layer tfl_layer;

typedef enum tfl_layer_kind {
    TFL_LAYER_DENSE = 1,
    TFL_LAYER_CONV2D,
    TFL_LAYER_MAX_POOL2D,
    TFL_LAYER_AVG_POOL2D,
    TFL_LAYER_FLATTEN,
    TFL_LAYER_RESHAPE,
    TFL_LAYER_DROPOUT,
    TFL_LAYER_BATCH_NORM,
    TFL_LAYER_ACTIVATION,
    TFL_LAYER_EMBEDDING,
    TFL_LAYER_LAYER_NORM,
    TFL_LAYER_GLOBAL_AVG_POOL2D,
    TFL_LAYER_POSITION_EMBEDDING,
    TFL_LAYER_MULTI_HEAD_ATTENTION,
    TFL_LAYER_ADD,            /* merges: tfl_layer_call_n */
    TFL_LAYER_CONCATENATE,
    TFL_LAYER_MULTIPLY,
    TFL_LAYER_KIND_END /* one past the last */
} tfl_layer_kind;

typedef enum tfl_activation {
    TFL_ACT_LINEAR = 0, /* none */
    TFL_ACT_RELU,
    TFL_ACT_SIGMOID,
    TFL_ACT_TANH,
    TFL_ACT_SOFTMAX,    /* over the last axis */
    TFL_ACT_GELU,       /* exact (erf) */
    TFL_ACT_SOFTPLUS,   /* log(1 + e^x) */
    TFL_ACT_SILU,       /* x sigmoid(x), also called swish */
    TFL_ACT_ELU,        /* alpha 1 */
    TFL_ACT_HARD_SIGMOID, /* relu6(x + 3) / 6 */
    TFL_ACT_END
} tfl_activation;

/** What a layer is. All-zero fields mean the defaults above. */
typedef struct tfl_layer_spec {
    tfl_layer_kind kind;
    const char *name;              /* NULL: the kind's name made unique */
    tfl_activation activation;     /* Dense, Conv2D, Activation */
    int64_t units;                 /* Dense: units; Conv2D: filters; Embedding: output_dim */
    int64_t input_dim;             /* Embedding: the vocabulary size */
    bool no_bias;                  /* Dense, Conv2D: no bias variable */
    int kernel_size[2];            /* Conv2D: (kh, kw), required; pools: 0 means 2 */
    int strides[2];                /* Conv2D: 0 means 1; pools: 0 means the pool size */
    int dilations[2];              /* Conv2D: 0 means 1 */
    tfl_padding padding;           /* Conv2D, pools */
    int target_rank;               /* Reshape: the shape after the batch axis */
    int64_t target_shape[TFL_MAX_RANK - 1];
    double rate;                   /* Dropout: in [0, 1) */
    uint64_t seed;                 /* Dropout: 0 takes the context's streams */
    double momentum;               /* BatchNormalization: 0 means 0.99 */
    double epsilon;                /* Batch/LayerNormalization: 0 means 1e-3 */
    bool no_center, no_scale;      /* Batch/LayerNormalization: no beta / no gamma */
    const tfl_initializer *kernel_init; /* NULL: glorot_uniform (embeddings: uniform ±0.05) */
    const tfl_initializer *bias_init;   /* NULL: zeros */
    int64_t sequence_length;       /* PositionEmbedding: the longest sequence (its table's rows) */
    int num_heads;                 /* MultiHeadAttention: heads, required */
    int64_t key_dim;               /* MultiHeadAttention: each head's query/key/value size;
                                      0: features / num_heads (which must divide) */
    bool causal;                   /* MultiHeadAttention: position i attends to positions <= i */
    int axis;                      /* Concatenate: the axis joined (negative: from the end);
                                      0 means -1 (the batch axis cannot be joined) */
} tfl_layer_spec;

/**
 * Makes a layer (its variables come on the first call). The spec is copied (its name and
 * its initializers too; an initializer's tensor is retained).
 * Returns: the layer (free with tfl_layer_free, or give it to a model), or NULL.
 * Errors: INVALID_ARGUMENT naming the field and value (unknown kind or activation, a field
 * the kind does not read, e.g. "Dropout has no option 'units'", units < 1, a missing kernel_size, strides/dilations < 0, rate outside [0, 1), momentum outside
 * [0, 1), epsilon < 0, a Reshape target with two -1 or a 0, a name that is taken, empty,
 * 128 bytes or longer, or holds '/' or ':'), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_layer *tfl_layer_new(tfl_ctx *ctx, const tfl_layer_spec *spec);

/**
 * Runs the layer on x (batch first). `training` picks Dropout's and BatchNormalization's
 * mode (and only BatchNormalization in training mode writes its moving statistics).
 * The first call makes the variables from x's shape; later calls must agree with it.
 * (LayerNormalization does the same in both modes.)
 * Returns: a frame-owned tensor, or NULL.
 * Errors: INVALID_ARGUMENT naming the layer and what is wrong ("dense_1: expected the
 * input's last dimension 256, got 128"; a rank the layer does not take; a non-float input,
 * except Embedding's integer ids), and the errors of the ops.
 */
TFL_API tfl_tensor *tfl_layer_call(tfl_layer *layer, const tfl_tensor *x, bool training);

/** The most inputs a merge layer takes. */
#define TFL_MAX_LAYER_INPUTS 32

/**
 * Runs a layer on n inputs: a merge (Add, Concatenate, Multiply) on its 2 to
 * TFL_MAX_LAYER_INPUTS inputs, any other kind on exactly 1 (as tfl_layer_call).
 * Returns: a frame-owned tensor, or NULL.
 * Errors: INVALID_ARGUMENT naming the layer: a count the kind does not take, inputs whose
 * shapes or dtypes do not merge ("add: input 1 has shape (4, 8), input 0 (4, 16)"), and
 * tfl_layer_call's.
 */
TFL_API tfl_tensor *tfl_layer_call_n(tfl_layer *layer, int n, const tfl_tensor *const *xs,
                                     bool training);

/**
 * The output shape for an input of shape (rank, shape), batch axis included, without
 * running anything (a -1 batch stays -1). out_shape needs room for TFL_MAX_RANK entries.
 * Returns the output rank, or -1 with the error kept (as tfl_layer_call's shape errors).
 */
TFL_API int tfl_layer_output_shape(tfl_layer *layer, int rank, const int64_t *shape,
                                   int64_t *out_shape);

/** tfl_layer_output_shape for n inputs, the i-th of shape (ranks[i], shapes[i]): what
 * tfl_layer_call_n checks (a -1 dimension matches any). */
TFL_API int tfl_layer_output_shape_n(tfl_layer *layer, int n, const int *ranks,
                                     const int64_t *const *shapes, int64_t *out_shape);

/**
 * Makes the variables for inputs of shape (rank, shape) (batch axis included, may be -1)
 * without running the layer: what a restore needs before the first call. Idempotent for
 * the same feature shape. Errors: as tfl_layer_call's shape errors, RESOURCE_EXHAUSTED.
 */
TFL_API tfl_status tfl_layer_build(tfl_layer *layer, int rank, const int64_t *shape);

/** The layer's name ("dense_1"); NULL for NULL. */
TFL_API const char *tfl_layer_name(const tfl_layer *layer);
/** Whether a live layer of ctx has this name (a spec naming it would be refused); false for
 * NULL ctx or name. */
TFL_API bool tfl_layer_name_taken(tfl_ctx *ctx, const char *name);
/** Dropout's count of training calls (mixed into a given seed: the mask of the next call
 * depends on it), for checkpoints; 0 for other kinds and NULL. Set puts a saved count back.
 * Errors of set: INVALID_ARGUMENT (NULL, a layer that is not Dropout). */
TFL_API uint64_t tfl_layer_rng_calls(const tfl_layer *layer);
TFL_API tfl_status tfl_layer_set_rng_calls(tfl_layer *layer, uint64_t calls);
/** The layer's kind; 0 for NULL. */
TFL_API tfl_layer_kind tfl_layer_kind_of(const tfl_layer *layer);
/** Keras's class name of a kind ("Dense", "Conv2D", ...); "?" when out of range. */
TFL_API const char *tfl_layer_kind_name(tfl_layer_kind kind);
/** The activation's name ("relu"); "?" when out of range. */
TFL_API const char *tfl_activation_name(tfl_activation act);

/** tfl_layer_variables' filter */
typedef enum tfl_var_filter {
    TFL_VARS_ALL = 0,
    TFL_VARS_TRAINABLE,
    TFL_VARS_NON_TRAINABLE,
} tfl_var_filter;

/**
 * The layer's variables (none before it is built), in creation order (kernel, bias; gamma,
 * beta, moving_mean, moving_variance), borrowed: valid until the layer is freed. Writes at
 * most `cap` of them to out (out may be NULL when cap is 0) and returns how many there are.
 */
TFL_API int tfl_layer_variables(const tfl_layer *layer, tfl_var_filter filter,
                                tfl_tensor **out, int cap);

/** The number of scalars in the layer's variables (0 before it is built). */
TFL_API int64_t tfl_layer_param_count(const tfl_layer *layer, tfl_var_filter filter);

/** Frees the layer and releases its variables. NULL is a no-op. A layer given to a model
 * is freed by the model. A layer already freed: MISUSE kept in its context (base.h). */
TFL_API void tfl_layer_free(tfl_layer *layer);

#ifdef __cplusplus
}
#endif

#endif /* TAPEFLOW_LAYERS_H */
