/*
 * framework/ops/op_list.h: the one list of ops. X(ID, "Name", arity, accepted dtypes, flags)
 * expands into the op enum, the op definition table (tfl__op_defs in ops/dispatch.c) and
 * every array indexed by op id (CPU and CUDA kernels, tape rules). Name is TensorFlow's op
 * name, used in messages and placement logs. Arity -1: variadic. The dtype mask is what the
 * op accepts (the key input's dtype); devices may implement a subset.
 */
#ifndef TFL_OP_LIST_H
#define TFL_OP_LIST_H

#define TFL_OPF_NO_GRAD 1u       /* no gradient flows through (int/bool results, StopGradient) */
#define TFL_OPF_VIEW 2u          /* no kernel: the result views the input's storage */
#define TFL_OPF_HALF_VIA_F32 4u  /* float16/bfloat16 run through the float32 kernel */

#define TFL_OP_LIST(X)                                                                     \
    X(IDENTITY, "Identity", 1, TFL_MASK_ALL, 0)                                            \
    X(ADD, "Add", 2, TFL_MASK_NUMERIC, TFL_OPF_HALF_VIA_F32)                               \
    X(SUB, "Sub", 2, TFL_MASK_NUMERIC, TFL_OPF_HALF_VIA_F32)                               \
    X(MUL, "Mul", 2, TFL_MASK_NUMERIC, TFL_OPF_HALF_VIA_F32)                               \
    X(DIV, "Div", 2, TFL_MASK_NUMERIC, TFL_OPF_HALF_VIA_F32)                               \
    X(POW, "Pow", 2, TFL_MASK_NUMERIC, TFL_OPF_HALF_VIA_F32)                               \
    X(MAXIMUM, "Maximum", 2, TFL_MASK_REAL, TFL_OPF_HALF_VIA_F32)                          \
    X(MINIMUM, "Minimum", 2, TFL_MASK_REAL, TFL_OPF_HALF_VIA_F32)                          \
    X(NEG, "Neg", 1, TFL_MASK_NUMERIC, TFL_OPF_HALF_VIA_F32)                               \
    X(EXP, "Exp", 1, TFL_MASK_FLOAT | TFL_MASK_COMPLEX, TFL_OPF_HALF_VIA_F32)              \
    X(LOG, "Log", 1, TFL_MASK_FLOAT | TFL_MASK_COMPLEX, TFL_OPF_HALF_VIA_F32)              \
    X(SQRT, "Sqrt", 1, TFL_MASK_FLOAT | TFL_MASK_COMPLEX, TFL_OPF_HALF_VIA_F32)            \
    X(ABS, "Abs", 1, TFL_MASK_NUMERIC, TFL_OPF_HALF_VIA_F32)                               \
    X(RELU, "Relu", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                               \
    X(RELU_GRAD, "ReluGrad", 2, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                      \
    X(LEAKY_RELU, "LeakyRelu", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                    \
    X(SIGMOID, "Sigmoid", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                         \
    X(TANH, "Tanh", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                               \
    X(GELU, "Gelu", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                               \
    X(SOFTMAX, "Softmax", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                         \
    X(LOG_SOFTMAX, "LogSoftmax", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                  \
    X(EQUAL, "Equal", 2, TFL_MASK_ALL, TFL_OPF_NO_GRAD | TFL_OPF_HALF_VIA_F32)             \
    X(NOT_EQUAL, "NotEqual", 2, TFL_MASK_ALL, TFL_OPF_NO_GRAD | TFL_OPF_HALF_VIA_F32)      \
    X(LESS, "Less", 2, TFL_MASK_REAL, TFL_OPF_NO_GRAD | TFL_OPF_HALF_VIA_F32)              \
    X(LESS_EQUAL, "LessEqual", 2, TFL_MASK_REAL, TFL_OPF_NO_GRAD | TFL_OPF_HALF_VIA_F32)   \
    X(GREATER, "Greater", 2, TFL_MASK_REAL, TFL_OPF_NO_GRAD | TFL_OPF_HALF_VIA_F32)        \
    X(GREATER_EQUAL, "GreaterEqual", 2, TFL_MASK_REAL, TFL_OPF_NO_GRAD | TFL_OPF_HALF_VIA_F32) \
    X(LOGICAL_AND, "LogicalAnd", 2, TFL_DT(BOOL), TFL_OPF_NO_GRAD)                         \
    X(LOGICAL_OR, "LogicalOr", 2, TFL_DT(BOOL), TFL_OPF_NO_GRAD)                           \
    X(LOGICAL_NOT, "LogicalNot", 1, TFL_DT(BOOL), TFL_OPF_NO_GRAD)                         \
    X(SUM, "Sum", 1, TFL_MASK_NUMERIC, TFL_OPF_HALF_VIA_F32)                               \
    X(MEAN, "Mean", 1, TFL_MASK_NUMERIC, TFL_OPF_HALF_VIA_F32)                             \
    X(MAX, "Max", 1, TFL_MASK_REAL, TFL_OPF_HALF_VIA_F32)                                  \
    X(MIN, "Min", 1, TFL_MASK_REAL, TFL_OPF_HALF_VIA_F32)                                  \
    X(ARGMAX, "ArgMax", 1, TFL_MASK_REAL, TFL_OPF_NO_GRAD | TFL_OPF_HALF_VIA_F32)          \
    X(ARGMIN, "ArgMin", 1, TFL_MASK_REAL, TFL_OPF_NO_GRAD | TFL_OPF_HALF_VIA_F32)          \
    X(MATMUL, "MatMul", 2, TFL_MASK_INT | TFL_DT(FLOAT32) | TFL_DT(FLOAT64) | TFL_MASK_COMPLEX, 0) \
    X(RESHAPE, "Reshape", 1, TFL_MASK_ALL, TFL_OPF_VIEW)                                   \
    X(TRANSPOSE, "Transpose", 1, TFL_MASK_ALL, TFL_OPF_VIEW)                               \
    X(SLICE, "Slice", 1, TFL_MASK_ALL, TFL_OPF_VIEW)                                       \
    X(CONCAT, "ConcatV2", -1, TFL_MASK_ALL, 0)                                             \
    X(GATHER, "GatherV2", 2, TFL_MASK_ALL, 0)                                              \
    X(ONE_HOT, "OneHot", 1, TFL_MASK_INT, TFL_OPF_NO_GRAD)                                 \
    X(CAST, "Cast", 1, TFL_MASK_ALL, 0)                                                    \
    X(WHERE, "SelectV2", 3, TFL_MASK_ALL, 0)                                               \
    X(ERF, "Erf", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                                 \
    X(SIGN, "Sign", 1, TFL_MASK_NUMERIC, TFL_OPF_HALF_VIA_F32)                             \
    X(CONJ, "Conj", 1, TFL_MASK_COMPLEX, 0)                                                \
    X(STOP_GRADIENT, "StopGradient", 1, TFL_MASK_ALL, TFL_OPF_NO_GRAD | TFL_OPF_VIEW)      \
    X(BROADCAST_TO, "BroadcastTo", 1, TFL_MASK_ALL, 0)                                     \
    X(PAD, "PadV2", 1, TFL_MASK_ALL, 0)                                                    \
    X(SEGMENT_SUM, "UnsortedSegmentSum", 2, TFL_MASK_NUMERIC, TFL_OPF_HALF_VIA_F32)        \
    X(SOFTMAX_XENT, "SoftmaxCrossEntropyWithLogits", 2, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32) \
    X(SPARSE_SOFTMAX_XENT, "SparseSoftmaxCrossEntropyWithLogits", 2, TFL_MASK_FLOAT,        \
      TFL_OPF_HALF_VIA_F32)                                                                \
    X(SIGMOID_XENT, "SigmoidCrossEntropyWithLogits", 2, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32) \
    X(BATCH_NORM, "BatchNorm", 5, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                     \
    X(DROPOUT, "Dropout", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                         \
    X(CONV2D, "Conv2D", 2, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                           \
    X(CONV2D_BACKPROP_INPUT, "Conv2DBackpropInput", 2, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32) \
    X(CONV2D_BACKPROP_FILTER, "Conv2DBackpropFilter", 2, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32) \
    X(MAX_POOL, "MaxPool", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                        \
    X(MAX_POOL_GRAD, "MaxPoolGrad", 2, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)               \
    X(MAX_POOL_GRAD_GRAD, "MaxPoolGradGrad", 2, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)      \
    X(AVG_POOL, "AvgPool", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)                        \
    X(AVG_POOL_GRAD, "AvgPoolGrad", 1, TFL_MASK_FLOAT, TFL_OPF_HALF_VIA_F32)

typedef enum tfl__op_id {
#define TFL_X_(id, name, arity, dtypes, flags) TFL_OP_##id,
    TFL_OP_LIST(TFL_X_)
#undef TFL_X_
    TFL_OP_COUNT
} tfl__op_id;

#endif /* TFL_OP_LIST_H */
