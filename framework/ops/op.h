/*
 * framework/ops/op.h: what op entry points, the dispatcher and device kernels share: the
 * op definition table, the kernel call record and the common path (tfl__op_run) that
 * places an op, copies inputs across devices, allocates the output and runs the kernel.
 */
#ifndef TFL_OPS_OP_H
#define TFL_OPS_OP_H

#include "internal.h"
#include "op_list.h"

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
 * The common path of every op with a kernel. Places the op (device scopes, soft placement,
 * kernels by key dtype), copies inputs living elsewhere, runs float16/bfloat16 through
 * float32 for TFL_OPF_HALF_VIA_F32 ops, allocates the output (out_dtype, out_shape) and
 * runs the kernel. Returns the frame-owned output or NULL with the error kept.
 */
tfl_tensor *tfl__op_run(tfl_ctx *ctx, tfl__op_id op, tfl_dtype key, int n_in,
                        const tfl_tensor *const *in, tfl_dtype out_dtype, int out_rank,
                        const int64_t *out_shape, const void *attrs);

/** Checks inputs for NULL (INVALID_ARGUMENT "input i is NULL" unless an error is kept). */
bool tfl__check_inputs(tfl_ctx *ctx, tfl__op_id op, int n, const tfl_tensor *const *in);
/** Checks the key dtype against the op's accepted dtypes (INVALID_ARGUMENT with the list). */
bool tfl__check_dtype(tfl_ctx *ctx, tfl__op_id op, tfl_dtype dtype);
/** Checks two inputs have one dtype ("dtypes differ: a is int32, b is float32"). */
bool tfl__check_same_dtype(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *a,
                           const tfl_tensor *b);
/** Logs "op Name on DEVICE" when placement logging is on (views log too). */
void tfl__log_placement(tfl_ctx *ctx, tfl__op_id op, const tfl__device *dev);

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
 * LayerNormGrad, for the backward rules: dx of y = layer_norm(x, gamma, beta, epsilon) for
 * the cotangent dy, over x's last axis (beta plays no part). gamma NULL means ones. Per row,
 * with xhat = (x - mean) rstd, rstd = 1 / sqrt(variance + epsilon) and g = dy gamma:
 *   dx = rstd (g - mean(g) - xhat mean(g xhat))
 * dy and x share one dtype and shape; NULL with the error kept, as every op.
 */
tfl_tensor *tfl__layer_norm_grad(tfl_ctx *ctx, const tfl_tensor *dy, const tfl_tensor *x,
                                 const tfl_tensor *gamma, double epsilon);
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

/** Chooses the device for op on key dtype (scopes, soft placement); NULL with the error kept. */
tfl__device *tfl__place_op(tfl_ctx *ctx, tfl__op_id op, tfl_dtype key);

/** INVALID_ARGUMENT for a sparse label value v outside [0, classes) at flat index `index` of
 * labels, naming the value, the range and the position ("at labels[3, 1]"): the message of
 * every backend's SparseSoftmaxCrossEntropyWithLogits kernel (loss.c). */
tfl_status tfl__sparse_label_error(tfl_ctx *ctx, const tfl_tensor *labels, int64_t index, int64_t v,
                                  int64_t classes);

#endif /* TFL_OPS_OP_H */
