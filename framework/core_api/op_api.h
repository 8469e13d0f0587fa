/*
 * framework/core_api/op_api.h: what the framework's ops declare for tape/ (the backward
 * rules) on top of module_api.h: the op list and definition table, each op family's typed
 * attributes, the gradient ops that have no public entry point, and the hook through which
 * tapes record ops (installed with tfl__tapes_set). ops/op.h includes it. Never installed.
 */
#ifndef TFL_FRAMEWORK_OP_API_H
#define TFL_FRAMEWORK_OP_API_H

#include "module_api.h"
#include "ops/op_list.h"

typedef struct tfl__op_def {
    const char *name;   /* TensorFlow's name: "MatMul" */
    int arity;          /* inputs; -1: variadic */
    uint32_t dtypes;    /* accepted dtypes of the key input (1u << tfl_dtype) */
    uint32_t flags;     /* TFL_OPF_* */
} tfl__op_def;

extern const tfl__op_def tfl__op_defs[TFL_OP_COUNT];
/** tfl__op_defs[op].name, as a function: what backend modules call (they see no data of the
 * library: backend_module.h). */
const char *tfl__op_name(tfl__op_id op);
/** The size of op's attribute struct (below), 0 for an op that takes none. */
size_t tfl__op_attrs_size(tfl__op_id op);

/* Typed attributes, one struct per op family (never packed ints). */
typedef struct tfl__reduce_attrs {
    uint8_t reduced[TFL_MAX_RANK]; /* 1 for each input axis reduced */
    int64_t count;                 /* elements reduced into each output element */
} tfl__reduce_attrs;
typedef struct tfl__axis_attrs {
    int axis;                      /* normalised, >= 0 */
} tfl__axis_attrs;
typedef struct tfl__scalar_attrs {
    double value;                  /* leaky_relu's alpha, gelu's approximate flag: the
                                      attribute of op_list.h's UA and DA lines */
} tfl__scalar_attrs;
typedef struct tfl__one_hot_attrs {
    int64_t depth;
    double on_value, off_value;
} tfl__one_hot_attrs;
typedef struct tfl__matmul_attrs {
    unsigned flags;                /* TFL_TRANSPOSE_A | TFL_TRANSPOSE_B */
} tfl__matmul_attrs;
typedef struct tfl__transpose_attrs {
    int perm[TFL_MAX_RANK];        /* output axis i is input axis perm[i] */
} tfl__transpose_attrs;
typedef struct tfl__slice_attrs {
    int64_t begin[TFL_MAX_RANK];   /* the size is the output's shape */
} tfl__slice_attrs;
typedef struct tfl__pad_attrs {
    int64_t before[TFL_MAX_RANK];  /* elements added before / after each axis */
    int64_t after[TFL_MAX_RANK];
    double value;                  /* what the added elements hold */
} tfl__pad_attrs;
typedef struct tfl__segment_attrs {
    int axis;                      /* where segment ids index the output */
    int64_t num_segments;
} tfl__segment_attrs;
typedef struct tfl__batch_norm_attrs {
    double epsilon;                /* added to the variance; > 0 */
} tfl__batch_norm_attrs;
/* LayerNorm and LayerNormGrad (ops/norm.c) */
typedef struct tfl__layer_norm_attrs {
    double epsilon;                /* added to each row's variance; > 0 */
} tfl__layer_norm_attrs;
/* AttentionSoftmax and SoftmaxGrad (ops/elementwise.c) */
typedef struct tfl__softmax_attrs {
    int axis;                      /* normalised, >= 0 (AttentionSoftmax: the last) */
    int causal;                    /* AttentionSoftmax: 1 keeps only entries (i, j), j <= i,
                                      of the last two axes; SoftmaxGrad: 0 */
    double scale;                  /* finite: the factor of x (AttentionSoftmax), of dx */
} tfl__softmax_attrs;
typedef struct tfl__dropout_attrs {
    double rate;                   /* probability of dropping an element, in (0, 1) */
    uint64_t key;                  /* the resolved Philox key (lo: key[0], hi: key[1]) */
} tfl__dropout_attrs;
/* Conv2D, its two backprops and the pooling ops (ops/conv.c): the window's geometry, checked
 * and resolved by the entry point, so kernels and backward rules only read it. */
typedef struct tfl__window_attrs {
    int64_t shape[4];              /* Conv2DBackpropInput, AvgPoolGrad: the input's shape;
                                      Conv2DBackpropFilter: the filter's; others: unused */
    int64_t ksize[2];              /* the window (rows, columns): the filter's KH, KW or the
                                      pooling ksize */
    int64_t strides[2];            /* >= 1 */
    int64_t dilations[2];          /* >= 1 (pooling: 1) */
    int64_t pad[2];                /* padding before the first row / column (elements) */
    int32_t padding;               /* tfl_padding, as given (rules pass it on) */
} tfl__window_attrs;

/**
 * The gradient op of a D or DA line of TFL_EW_LIST (op_list.h), for the backward rules:
 * op is its ID_GRAD, the result dy * f'(x) elementwise (broadcasting), attrs the forward's
 * (NULL for D). NULL with the error kept, as every op.
 */
tfl_tensor *tfl__elementwise_grad(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *dy,
                                  const tfl_tensor *x, const tfl__scalar_attrs *attrs);

/**
 * Dropout with a resolved Philox key (tfl__rng_key): tfl_dropout after its checks, and the
 * backward rule, which drops dy with the forward's mask. rate in (0, 1); x floating.
 */
tfl_tensor *tfl__dropout_keyed(tfl_ctx *ctx, const tfl_tensor *x, double rate, uint64_t key);
/**
 * SoftmaxGrad, for the backward rules: dx of y = softmax(scale x) (tfl_softmax,
 * tfl_attention_softmax) for the cotangent dy, along `axis` (normalised, >= 0):
 *   dx = scale y (dy - sum(dy y))
 * An entry of y that is 0 (one a causal mask excluded) gets a dx of 0. y and dy share one
 * dtype and shape; NULL with the error kept, as every op.
 */
tfl_tensor *tfl__softmax_grad(tfl_ctx *ctx, const tfl_tensor *y, const tfl_tensor *dy, int axis,
                              double scale);
/**
 * LayerNormGrad, for the backward rules: dx of y = layer_norm(x, gamma, beta, epsilon) for
 * the cotangent dy, over x's last axis (beta plays no part). gamma NULL means ones. Per row,
 * with xhat = (x - mean) rstd, rstd = 1 / sqrt(variance + epsilon) and g = dy gamma:
 *   dx = rstd (g - mean(g) - xhat mean(g xhat))
 * dy and x share one dtype and shape; NULL with the error kept, as every op.
 */
tfl_tensor *tfl__layer_norm_grad(tfl_ctx *ctx, const tfl_tensor *dy, const tfl_tensor *x,
                                 const tfl_tensor *gamma, double epsilon);
/**
 * SparseSoftmaxCrossEntropyWithLogitsGrad, for the backward rules: dlogits of the sparse
 * softmax cross-entropy (tfl_sparse_softmax_cross_entropy) for the cotangent dy:
 *   dx = dy (softmax(logits) - one_hot(labels))   per row of the last axis
 * in one pass over the logits (nothing materialised). dy has the labels' shape and the
 * logits' dtype; a label outside [0, classes) is the forward's error.
 */
tfl_tensor *tfl__sparse_softmax_xent_grad(tfl_ctx *ctx, const tfl_tensor *logits,
                                          const tfl_tensor *labels, const tfl_tensor *dy);
/**
 * LayerNormParamGrad: the gradients of gamma and beta of y = layer_norm(x, gamma, beta,
 * epsilon) for the cotangent dy, as one (2, C) tensor (C = x's last axis): row 0
 * sum(dy xhat) (gamma's), row 1 sum(dy) (beta's), sums over every row, xhat x's row
 * normalised. One pass over dy and x; dy and x share one dtype and shape.
 */
tfl_tensor *tfl__layer_norm_param_grad(tfl_ctx *ctx, const tfl_tensor *dy, const tfl_tensor *x,
                                       double epsilon);
/**
 * BatchNormTraining with the batch's statistics given, for tfl_batch_norm_training and the
 * backward rules: y = (x - mean) / sqrt(variance + epsilon) gamma + beta per channel along
 * x's last axis, where moments (2, C) holds x's mean and biased variance (BatchMoments of x:
 * a tape treats them as constants, and the op's gradient includes their dependence on x).
 * gamma NULL means ones, beta NULL zeros. NULL with the error kept, as every op.
 */
tfl_tensor *tfl__batch_norm_apply(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *moments,
                                  const tfl_tensor *gamma, const tfl_tensor *beta, double epsilon);
/**
 * BatchNormParamGrad: the gradients of gamma and beta of y = tfl__batch_norm_apply(x,
 * moments, gamma, beta) for the cotangent dy, as one (2, C) tensor: row 0 sum(dy xhat)
 * (gamma's), row 1 sum(dy) (beta's), sums over every axis but the last, xhat = (x - mean)
 * rstd, rstd = 1 / sqrt(variance + epsilon). dy and x share one dtype and shape.
 */
tfl_tensor *tfl__batch_norm_param_grad(tfl_ctx *ctx, const tfl_tensor *dy, const tfl_tensor *x,
                                       const tfl_tensor *moments, double epsilon);
/**
 * BatchNormTrainingGrad: dx of y = tfl__batch_norm_apply(x, moments, gamma, beta) for the
 * cotangent dy. Per channel, with means over every axis but the last:
 *   dx = gamma rstd (dy - mean(dy) - xhat mean(dy xhat))
 * sums: dy's BatchNormParamGrad (its sums are the op's; NULL: computed here). gamma NULL means
 * ones; dy and x share one dtype and shape.
 */
tfl_tensor *tfl__batch_norm_training_grad(tfl_ctx *ctx, const tfl_tensor *dy,
                                          const tfl_tensor *x, const tfl_tensor *moments,
                                          const tfl_tensor *gamma, const tfl_tensor *sums,
                                          double epsilon);
/* ---- the gradient ops of pooling (ops/conv.c), for the backward rules in tape/ ---------- */

/** TensorFlow's MaxPoolGrad: dy (the pooled shape) added at each window's argmax (the first
 * in row-major window order on ties) of x; the result has x's shape. opts as max_pool2d's. */
tfl_tensor *tfl__max_pool_grad(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *dy,
                               const tfl_pool2d_opts *opts);
/** TensorFlow's MaxPoolGradGrad: g (x's shape) gathered at each window's argmax of x; the
 * result has the pooled shape. The adjoint of tfl__max_pool_grad in its dy. */
tfl_tensor *tfl__max_pool_grad_grad(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *g,
                                    const tfl_pool2d_opts *opts);
/** TensorFlow's AvgPoolGrad: dy (the pooled shape) / count spread over each window of an
 * input of input_shape; the adjoint of average pooling. */
tfl_tensor *tfl__avg_pool_grad(tfl_ctx *ctx, const int64_t input_shape[4], const tfl_tensor *dy,
                               const tfl_pool2d_opts *opts);

/* ---- tapes (core_api.c): the tape module's state in a context -------------------------- */

/** The tape's recording hook: op produced `out` from `in` with `attrs` (the op family's
 * struct from ops/op.h, or NULL). */
typedef void (*tfl__record_fn)(tfl_ctx *ctx, tfl__op_id op, int n_in,
                               const tfl_tensor *const *in, const tfl_tensor *out,
                               const void *attrs);

/** The tape module's state in ctx (NULL before the first tape). */
void *tfl__tapes_get(const tfl_ctx *ctx);
/** Installs the tape module's state, the hook the ops call while a tape records and the
 * function tfl_ctx_free calls to free every tape still alive; a NULL state also sets the
 * count of recording tapes to 0. */
void tfl__tapes_set(tfl_ctx *ctx, void *state, tfl__record_fn record, void (*free_all)(tfl_ctx *));
/** Adds delta (+1: a tape starts recording, -1: one stops) to the recording tapes' count. */
void tfl__recording_add(tfl_ctx *ctx, int delta);

#endif /* TFL_FRAMEWORK_OP_API_H */
