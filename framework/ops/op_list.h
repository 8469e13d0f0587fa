/*
 * framework/ops/op_list.h: the one list of ops. X(ID, "Name", arity, accepted dtypes, flags)
 * expands into the op enum, the op definition table (tfl__op_defs in ops/dispatch.c) and
 * every array indexed by op id (CPU and CUDA kernels, tape rules). Name is TensorFlow's op
 * name, used in messages and placement logs. Arity -1: variadic. The dtype mask is what the op accepts
 * (the key input's dtype); devices may implement a subset.
 *
 * The elementwise ops have a list of their own, TFL_EW_LIST below, with the columns their
 * generated code needs; TFL_OP_LIST takes its lines in. See docs/elementwise_ops.md.
 */
#ifndef TFL_OP_LIST_H
#define TFL_OP_LIST_H

#define TFL_OPF_NO_GRAD 1u       /* no gradient flows through (int/bool results, StopGradient) */
#define TFL_OPF_VIEW 2u          /* no kernel: the result views the input's storage */
#define TFL_OPF_HALF_VIA_F32 4u  /* float16/bfloat16 run through the float32 kernel */
/* Mixed precision (ops/dispatch.c's tfl__autocast, under a bfloat16 or float16 policy): */
#define TFL_OPF_AMP_LOW 8u  /* float32 inputs are cast to the policy's 16-bit dtype */
#define TFL_OPF_AMP_F32 16u /* 16-bit inputs are cast to float32 (sums, softmax, losses, norms) */

/*
 * The elementwise ops, one line each:
 *   E(ctx, ID, "Name", fn, kind, out, cpu, gpu, api, saves)
 * fn      the stem of everything generated: the scalar functions tfl_ew_<fn>_<dtype> of
 *         ops/ew_math.h, the entry point tfl_<fn>, the backward rule tfl__grad_<fn>
 * kind    U  unary, fn(x)          UA unary with the op's scalar attribute, fn(x, a)
 *         B  binary, fn(x, y)      (broadcasting; the two inputs share one dtype)
 *         D  unary with its derivative fn_d(x) beside it in ew_math.h; makes a second op
 *            ID_GRAD ("NameGrad", dy * fn_d(x)) and both backward rules (tape/rules_ew.c),
 *            given the second derivative written with ops (TFL_D2(fn), tape/rules_ew.c)
 *         DA as D with the scalar attribute: fn(x, a), fn_d(x, a)
 * out     SAME as the input; BOOL (comparisons, logic: no gradient); REAL (complex -> its
 *         real dtype: Abs)
 * cpu     the dtypes of the CPU loops: NUM (int32, int64, float32, float64, complex64,
 *         complex128), REAL (int32 to float64), FLOATC (floats and complex), FLOAT (float32,
 *         float64), ALL (NUM and bool), BOOL, CPLX (complex only). float16 and bfloat16 run
 *         through float32 wherever float32 is in the set (TFL_OPF_HALF_VIA_F32).
 * gpu     the dtypes of the CUDA functors: R (int32 to float64), F (float32, float64),
 *         RB (R and bool), B (bool), C (complex), NONE
 * api     API: tfl_<fn> is generated (ops/elementwise.c) with the kind's signature (UA and
 *         DA take `double a`); OWN: its entry point is written by hand
 * saves   what the rule keeps for each input's gradient (tape/rules.c's IN(i), OUT), or ()
 * ctx     passed through unchanged (TFL_OP_LIST passes its X)
 * The public declaration (<tapeflow/ops.h>) is written by hand, with its doc comment.
 */
#define TFL_EW_LIST(E, ctx)                                                                    \
    E(ctx, ADD, "Add", add, B, SAME, NUM, R, API, (0, 0))                                      \
    E(ctx, SUB, "Sub", sub, B, SAME, NUM, R, API, (0, 0))                                      \
    E(ctx, MUL, "Mul", mul, B, SAME, NUM, R, API, (IN(1), IN(0)))                              \
    E(ctx, DIV, "Div", div, B, SAME, NUM, F, API, (IN(1), IN(1) | OUT))                        \
    E(ctx, POW, "Pow", pow, B, SAME, NUM, F, API, (IN(0) | IN(1), IN(0) | OUT))                \
    E(ctx, MAXIMUM, "Maximum", maximum, B, SAME, REAL, R, API, (IN(0) | IN(1), IN(0) | IN(1))) \
    E(ctx, MINIMUM, "Minimum", minimum, B, SAME, REAL, R, API, (IN(0) | IN(1), IN(0) | IN(1))) \
    E(ctx, NEG, "Neg", neg, U, SAME, NUM, R, API, (0))                                         \
    E(ctx, EXP, "Exp", exp, U, SAME, FLOATC, F, API, (OUT))                                    \
    E(ctx, LOG, "Log", log, U, SAME, FLOATC, F, API, (IN(0)))                                  \
    E(ctx, SQRT, "Sqrt", sqrt, U, SAME, FLOATC, F, API, (OUT))                                 \
    E(ctx, ABS, "Abs", abs, U, REAL, NUM, R, API, (IN(0)))                                     \
    E(ctx, ERF, "Erf", erf, U, SAME, FLOAT, F, API, (IN(0)))                                   \
    E(ctx, SIGN, "Sign", sign, U, SAME, NUM, R, API, (IN(0)))                                  \
    E(ctx, CONJ, "Conj", conj, U, SAME, CPLX, C, OWN, (0))                                     \
    E(ctx, RELU, "Relu", relu, U, SAME, FLOAT, F, API, (OUT))                                  \
    E(ctx, RELU_GRAD, "ReluGrad", relu_grad, B, SAME, FLOAT, F, API, (IN(1), 0))               \
    E(ctx, LEAKY_RELU, "LeakyRelu", leaky_relu, UA, SAME, FLOAT, F, API, (IN(0)))              \
    E(ctx, SIGMOID, "Sigmoid", sigmoid, U, SAME, FLOAT, F, API, (OUT))                         \
    E(ctx, TANH, "Tanh", tanh, U, SAME, FLOAT, F, API, (OUT))                                  \
    E(ctx, GELU, "Gelu", gelu, DA, SAME, FLOAT, F, OWN, ())                                    \
    E(ctx, SOFTPLUS, "Softplus", softplus, D, SAME, FLOAT, F, API, ())                         \
    E(ctx, SILU, "Silu", silu, D, SAME, FLOAT, F, API, ())                                     \
    E(ctx, ELU, "Elu", elu, DA, SAME, FLOAT, F, API, ())                                       \
    E(ctx, HARD_SIGMOID, "HardSigmoid", hard_sigmoid, D, SAME, FLOAT, F, API, ())              \
    E(ctx, SIGMOID_XENT, "SigmoidCrossEntropyWithLogits", sigmoid_xent, B, SAME, FLOAT, F, OWN, \
      (IN(0) | IN(1), IN(0)))                                                                  \
    E(ctx, EQUAL, "Equal", equal, B, BOOL, ALL, RB, API, ())                                   \
    E(ctx, NOT_EQUAL, "NotEqual", not_equal, B, BOOL, ALL, RB, API, ())                        \
    E(ctx, LESS, "Less", less, B, BOOL, REAL, R, API, ())                                      \
    E(ctx, LESS_EQUAL, "LessEqual", less_equal, B, BOOL, REAL, R, API, ())                     \
    E(ctx, GREATER, "Greater", greater, B, BOOL, REAL, R, API, ())                             \
    E(ctx, GREATER_EQUAL, "GreaterEqual", greater_equal, B, BOOL, REAL, R, API, ())            \
    E(ctx, LOGICAL_AND, "LogicalAnd", logical_and, B, BOOL, BOOL, B, API, ())                  \
    E(ctx, LOGICAL_OR, "LogicalOr", logical_or, B, BOOL, BOOL, B, API, ())                     \
    E(ctx, LOGICAL_NOT, "LogicalNot", logical_not, U, BOOL, BOOL, B, API, ())

/* ---- what TFL_OP_LIST takes from each elementwise line ------------------------------------ */

/* the dtypes an op accepts (its key input's) and the CPU loops' dtypes, per `cpu` set */
#define TFL_EW_ACCEPT_NUM TFL_MASK_NUMERIC
#define TFL_EW_ACCEPT_REAL TFL_MASK_REAL
#define TFL_EW_ACCEPT_FLOATC (TFL_MASK_FLOAT | TFL_MASK_COMPLEX)
#define TFL_EW_ACCEPT_FLOAT TFL_MASK_FLOAT
#define TFL_EW_ACCEPT_ALL TFL_MASK_ALL
#define TFL_EW_ACCEPT_BOOL TFL_DT(BOOL)
#define TFL_EW_ACCEPT_CPLX TFL_MASK_COMPLEX
#define TFL_EW_HALF_NUM TFL_OPF_HALF_VIA_F32
#define TFL_EW_HALF_REAL TFL_OPF_HALF_VIA_F32
#define TFL_EW_HALF_FLOATC TFL_OPF_HALF_VIA_F32
#define TFL_EW_HALF_FLOAT TFL_OPF_HALF_VIA_F32
#define TFL_EW_HALF_ALL TFL_OPF_HALF_VIA_F32
#define TFL_EW_HALF_BOOL 0u
#define TFL_EW_HALF_CPLX 0u
#define TFL_EW_NOGRAD_SAME 0u
#define TFL_EW_NOGRAD_REAL 0u
#define TFL_EW_NOGRAD_BOOL TFL_OPF_NO_GRAD
#define TFL_EW_FLAGS_(cpu, out) (TFL_EW_HALF_##cpu | TFL_EW_NOGRAD_##out)

#define TFL_EW_OP_(X, id, nm, fn, kind, out, cpu, gpu, api, saves)                              \
    TFL_EW_OP_##kind(X, id, nm, TFL_EW_ACCEPT_##cpu, TFL_EW_FLAGS_(cpu, out))
#define TFL_EW_OP_U(X, id, nm, dt, fl) X(id, nm, 1, dt, fl)
#define TFL_EW_OP_UA(X, id, nm, dt, fl) X(id, nm, 1, dt, fl)
#define TFL_EW_OP_B(X, id, nm, dt, fl) X(id, nm, 2, dt, fl)
#define TFL_EW_OP_D(X, id, nm, dt, fl) X(id, nm, 1, dt, fl) X(id##_GRAD, nm "Grad", 2, dt, fl)
#define TFL_EW_OP_DA(X, id, nm, dt, fl) TFL_EW_OP_D(X, id, nm, dt, fl)
#define TFL_EW_OPS(X) TFL_EW_LIST(TFL_EW_OP_, X)

/* helpers of the generators: a parenthesised list unwrapped, a line kept or dropped */
#define TFL_EW_UNPAREN(...) __VA_ARGS__
#define TFL_EW_KEEP(...) __VA_ARGS__
#define TFL_EW_DROP(...)

#define TFL_OP_LIST(X)                                                                            \
    X(IDENTITY, "Identity", 1, TFL_MASK_ALL, 0)                                                   \
    TFL_EW_OPS(X)                                                                                 \
    X(SOFTMAX, "Softmax", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)              \
    X(LOG_SOFTMAX, "LogSoftmax", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)       \
    X(SUM, "Sum", 1, TFL_MASK_NUMERIC, TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)                    \
    X(MEAN, "Mean", 1, TFL_MASK_NUMERIC, TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)                  \
    X(MAX, "Max", 1, TFL_MASK_REAL, TFL_OPF_HALF_VIA_F32)                                         \
    X(MIN, "Min", 1, TFL_MASK_REAL, TFL_OPF_HALF_VIA_F32)                                         \
    X(ARGMAX, "ArgMax", 1, TFL_MASK_REAL, TFL_OPF_NO_GRAD | TFL_OPF_HALF_VIA_F32)                 \
    X(ARGMIN, "ArgMin", 1, TFL_MASK_REAL, TFL_OPF_NO_GRAD | TFL_OPF_HALF_VIA_F32)                 \
    X(MATMUL, "MatMul", 2, TFL_MASK_INT | TFL_MASK_FLOAT | TFL_MASK_COMPLEX,                      \
      TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_LOW)                                                     \
    X(RESHAPE, "Reshape", 1, TFL_MASK_ALL, TFL_OPF_VIEW)                                          \
    X(TRANSPOSE, "Transpose", 1, TFL_MASK_ALL, TFL_OPF_VIEW)                                      \
    X(SLICE, "Slice", 1, TFL_MASK_ALL, TFL_OPF_VIEW)                                              \
    X(CONCAT, "ConcatV2", -1, TFL_MASK_ALL, 0)                                                    \
    X(GATHER, "GatherV2", 2, TFL_MASK_ALL, 0)                                                     \
    X(ONE_HOT, "OneHot", 1, TFL_MASK_INT, TFL_OPF_NO_GRAD)                                        \
    X(CAST, "Cast", 1, TFL_MASK_ALL, 0)                                                           \
    X(WHERE, "SelectV2", 3, TFL_MASK_ALL, 0)                                                      \
    X(STOP_GRADIENT, "StopGradient", 1, TFL_MASK_ALL, TFL_OPF_NO_GRAD | TFL_OPF_VIEW)             \
    X(BROADCAST_TO, "BroadcastTo", 1, TFL_MASK_ALL, 0)                                            \
    X(PAD, "PadV2", 1, TFL_MASK_ALL, 0)                                                           \
    X(SEGMENT_SUM, "UnsortedSegmentSum", 2, TFL_MASK_NUMERIC,                                     \
      TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)                                                     \
    X(SOFTMAX_XENT, "SoftmaxCrossEntropyWithLogits", 2, TFL_MASK_FLOAT,                           \
      TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)                                                     \
    X(SPARSE_SOFTMAX_XENT, "SparseSoftmaxCrossEntropyWithLogits", 2, TFL_MASK_FLOAT,              \
      TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)                                                     \
    X(BATCH_NORM, "BatchNorm", 5, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)         \
    X(DROPOUT, "Dropout", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                                \
    X(CONV2D, "Conv2D", 2, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_LOW)                \
    X(CONV2D_BACKPROP_INPUT, "Conv2DBackpropInput", 2, TFL_MASK_FLOAT,                            \
      TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_LOW)                                                     \
    X(CONV2D_BACKPROP_FILTER, "Conv2DBackpropFilter", 2, TFL_MASK_FLOAT,                          \
      TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_LOW)                                                     \
    X(MAX_POOL, "MaxPool", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                               \
    X(MAX_POOL_GRAD, "MaxPoolGrad", 2, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                      \
    X(MAX_POOL_GRAD_GRAD, "MaxPoolGradGrad", 2, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)             \
    X(AVG_POOL, "AvgPool", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                               \
    X(AVG_POOL_GRAD, "AvgPoolGrad", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                      \
    X(LAYER_NORM, "LayerNorm", 3, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)         \
    X(LAYER_NORM_GRAD, "LayerNormGrad", 3, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32) \
    X(BATCH_MOMENTS, "BatchMoments", 1, TFL_MASK_FLOAT,                                           \
      TFL_OPF_NO_GRAD | TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)                                   \
    X(BATCH_NORM_TRAINING, "BatchNormTraining", 4, TFL_MASK_FLOAT,                                \
      TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)                                                     \
    X(BATCH_NORM_TRAINING_GRAD, "BatchNormTrainingGrad", 5, TFL_MASK_FLOAT,                       \
      TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)                                                     \
    X(BATCH_NORM_PARAM_GRAD, "BatchNormParamGrad", 3, TFL_MASK_FLOAT,                             \
      TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)                                                     \
    X(ATTENTION_SOFTMAX, "AttentionSoftmax", 1, TFL_MASK_FLOAT,                                   \
      TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)                                                     \
    X(SOFTMAX_GRAD, "SoftmaxGrad", 2, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)     \
    X(LAYER_NORM_PARAM_GRAD, "LayerNormParamGrad", 2, TFL_MASK_FLOAT,                             \
      TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)                                                     \
    X(SPARSE_SOFTMAX_XENT_GRAD, "SparseSoftmaxCrossEntropyWithLogitsGrad", 3, TFL_MASK_FLOAT,     \
      TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_F32)                                                     \
    X(FUSED_MATMUL, "FusedMatMul", 3, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32 | TFL_OPF_AMP_LOW)

typedef enum tfl__op_id {
#define TFL_X_(id, name, arity, dtypes, flags) TFL_OP_##id,
    TFL_OP_LIST(TFL_X_)
#undef TFL_X_
    TFL_OP_COUNT
} tfl__op_id;

#endif /* TFL_OP_LIST_H */
