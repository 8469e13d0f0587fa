/*
 * tape/rules.c: the backward-rule table, one line per op of framework/ops/op_list.h, and
 * the helpers the rules share. A rule's line says which function computes the input
 * gradients, how many bytes of the op's attrs to keep, and what to keep when each input
 * needs a gradient (the other operand for mul and matmul, the output for exp, nothing for
 * add), so a tape saves no more than the rule reads.
 *
 * Adding an op: write its rule in rules_math.c, rules_array.c, rules_loss.c, rules_norm.c or
 * rules_conv.c with ordinary ops (then it is differentiable again, for higher order), add its
 * line here, and its case to the gradient checks (tests/tape/test_gradcheck*.c), which fail
 * for an op without either. An elementwise op (framework/ops/op_list.h's TFL_EW_LIST) gets
 * its line and declaration from the list; an activation with a derivative there needs only
 * its second derivative in rules_ew.c (docs/elementwise_ops.md).
 */
#include "tape_internal.h"

#define IN(i) TFL_SAVE_IN(i)
#define OUT TFL_SAVE_OUT
#define R(OP, fn, attrs_size, ...) [TFL_OP_##OP] = {tfl__grad_##fn, attrs_size, {__VA_ARGS__}}
#define A(family) sizeof(tfl__##family##_attrs)

/* the lines of TFL_EW_LIST: kind U and B keep no attrs, UA and DA the scalar one; D and DA
 * make two rules (tape/rules_ew.c): the op's keeps x, its gradient op's keeps x for dy's
 * gradient and both inputs for x's; comparisons and logic (out BOOL) have none */
#define EW_RULES_(ctx, id, nm, fn, kind, out, cpu, gpu, api, saves)                                \
    EW_RULES_##out(EW_RULE_##kind(id, fn, saves))
#define EW_RULES_SAME TFL_EW_KEEP
#define EW_RULES_REAL TFL_EW_KEEP
#define EW_RULES_BOOL TFL_EW_DROP
#define EW_RULE_U(id, fn, saves) R(id, fn, 0, TFL_EW_UNPAREN saves),
#define EW_RULE_B EW_RULE_U
#define EW_RULE_UA(id, fn, saves) R(id, fn, A(scalar), TFL_EW_UNPAREN saves),
#define EW_RULE_D(id, fn, saves)                                                                   \
    R(id, fn, 0, IN(0)), R(id##_GRAD, fn##_grad, 0, IN(1), IN(0) | IN(1)),
#define EW_RULE_DA(id, fn, saves)                                                                  \
    R(id, fn, A(scalar), IN(0)), R(id##_GRAD, fn##_grad, A(scalar), IN(1), IN(0) | IN(1)),

/* clang-format off */
const tfl__grad_rule tfl__grad_rules[TFL_OP_COUNT] = {
    R(IDENTITY, identity, 0, 0),
    TFL_EW_LIST(EW_RULES_, ~) /* the elementwise ops (op_list.h) */
    R(SOFTMAX, softmax, A(axis), OUT),
    R(LOG_SOFTMAX, log_softmax, A(axis), OUT),
    R(ATTENTION_SOFTMAX, attention_softmax, A(softmax), OUT),
    /* SoftmaxGrad (y, dy): y needs both; dy y */
    R(SOFTMAX_GRAD, softmax_grad, A(softmax), IN(0) | IN(1), IN(0)),
    R(SUM, sum, A(reduce), 0),
    R(MEAN, mean, A(reduce), 0),
    R(MAX, max_min, A(reduce), IN(0) | OUT),
    R(MIN, max_min, A(reduce), IN(0) | OUT),
    R(MATMUL, matmul, A(matmul), IN(1), IN(0)),
    /* FusedMatMul (a, b, bias): a needs b, b needs a, the bias nothing (Add's rule) */
    R(FUSED_MATMUL, fused_matmul, A(matmul), IN(1), IN(0), 0),
    R(RESHAPE, reshape, 0, 0),
    R(TRANSPOSE, transpose, A(transpose), 0),
    R(SLICE, slice, A(slice), 0),
    R(CONCAT, concat, A(axis), 0),
    R(GATHER, gather, A(axis), IN(1), 0),
    R(CAST, cast, 0, 0),
    R(WHERE, where, 0, 0, IN(0), IN(0)),
    R(BROADCAST_TO, broadcast_to, 0, 0),
    R(PAD, pad, A(pad), 0),
    R(SEGMENT_SUM, segment_sum, A(segment), IN(1), 0),
    R(SOFTMAX_XENT, softmax_xent, A(axis), IN(0) | IN(1), IN(0)),
    R(SPARSE_SOFTMAX_XENT, sparse_softmax_xent, 0, IN(0) | IN(1), 0),
    /* SparseSoftmaxCrossEntropyWithLogitsGrad (x, labels, dy): x needs all three; labels none;
       dy x and labels */
    R(SPARSE_SOFTMAX_XENT_GRAD, sparse_softmax_xent_grad, 0, IN(0) | IN(1) | IN(2), 0,
      IN(0) | IN(1)),
    /* x and mean need variance and scale; variance needs all but offset; scale x, mean, var */
    R(BATCH_NORM, batch_norm, A(batch_norm), IN(2) | IN(4), IN(2) | IN(4),
      IN(0) | IN(1) | IN(2) | IN(4), 0, IN(0) | IN(1) | IN(2)),
    R(DROPOUT, dropout, A(dropout), 0),
    /* x needs x and gamma; gamma and beta x (LayerNormParamGrad) */
    R(LAYER_NORM, layer_norm, A(layer_norm), IN(0) | IN(1), IN(0), IN(0)),
    /* LayerNormGrad (dy, x, gamma): dy needs x and gamma; x all three and the output;
       gamma dy and x */
    R(LAYER_NORM_GRAD, layer_norm_grad, A(layer_norm), IN(1) | IN(2),
      IN(0) | IN(1) | IN(2) | OUT, IN(0) | IN(1)),
    /* LayerNormParamGrad (dy, x): dy needs x; x both */
    R(LAYER_NORM_PARAM_GRAD, layer_norm_param_grad, A(layer_norm), IN(1), IN(0) | IN(1)),
    /* BatchNormTraining (x, moments, gamma, beta): x needs x, moments and gamma; gamma x and
       moments; beta nothing (its sum, or the one beside gamma's); moments are constants */
    R(BATCH_NORM_TRAINING, batch_norm_training, A(batch_norm), IN(0) | IN(1) | IN(2), 0,
      IN(0) | IN(1), 0),
    /* BatchNormTrainingGrad (dy, x, moments, gamma, sums): dy needs x, moments and gamma; x
       all but sums, and the output; gamma dy, x and moments; sums (a gradient of 0) nothing */
    R(BATCH_NORM_TRAINING_GRAD, batch_norm_training_grad, A(batch_norm), IN(1) | IN(2) | IN(3),
      IN(0) | IN(1) | IN(2) | IN(3) | OUT, 0, IN(0) | IN(1) | IN(2), 0),
    /* BatchNormParamGrad (dy, x, moments): dy needs x and moments; x all three */
    R(BATCH_NORM_PARAM_GRAD, batch_norm_param_grad, A(batch_norm), IN(1) | IN(2),
      IN(0) | IN(1) | IN(2), 0),
    R(CONV2D, conv2d, A(window), IN(1), IN(0)),
    R(CONV2D_BACKPROP_INPUT, conv2d_backprop_input, A(window), IN(1), IN(0)),
    R(CONV2D_BACKPROP_FILTER, conv2d_backprop_filter, A(window), IN(1), IN(0)),
    R(MAX_POOL, max_pool, A(window), IN(0)),
    R(MAX_POOL_GRAD, max_pool_grad, A(window), 0, IN(0)),
    R(MAX_POOL_GRAD_GRAD, max_pool_grad_grad, A(window), 0, IN(0)),
    R(AVG_POOL, avg_pool, A(window), 0),
    R(AVG_POOL_GRAD, avg_pool_grad, A(window), 0),
    /* not differentiable (TFL_OPF_NO_GRAD): comparisons, logic, argmax/argmin, one_hot,
       stop_gradient */
};
/* clang-format on */

tfl_grad_kind tfl_op_gradient_kind(int op)
{
    if (op < 0 || op >= TFL_OP_COUNT) return TFL_GRAD_MISSING;
    if (tfl__op_defs[op].flags & TFL_OPF_NO_GRAD) return TFL_GRAD_NOT_DIFFERENTIABLE;
    return tfl__grad_rules[op].fn ? TFL_GRAD_DEFINED : TFL_GRAD_MISSING;
}

/* ---- helpers ------------------------------------------------------------------------------------ */

tfl_tensor *tfl__sum_to_input(const tfl__grad_call *g, const tfl_tensor *t, int i)
{
    const tfl__tape_in *r = &g->in[i];
    if (!t || tfl__same_shape(t->rank, t->shape, r->rank, r->shape)) return (tfl_tensor *)t;
    int axes[TFL_MAX_RANK], n = 0, lead = t->rank - r->rank;
    for (int d = 0; d < t->rank; d++)
        if (d < lead || (r->shape[d - lead] == 1 && t->shape[d] != 1)) axes[n++] = d;
    tfl_tensor *s = n ? tfl_reduce_sum(g->ctx, t, n, axes, true) : (tfl_tensor *)t;
    return tfl_reshape(g->ctx, s, r->rank, r->shape);
}

tfl_tensor *tfl__scalar_like(const tfl__grad_call *g, const tfl_tensor *t, double value)
{
    return t ? tfl_fill(g->ctx, (tfl_dtype)t->dtype, 0, NULL, value) : NULL;
}

const tfl_tensor *tfl__cj(const tfl__grad_call *g, const tfl_tensor *t)
{
    if (t && tfl_dtype_is_complex((tfl_dtype)t->dtype)) return tfl_conj(g->ctx, t);
    return t;
}

tfl_tensor *tfl__zeros_like_input(const tfl__grad_call *g, int i)
{
    return tfl_zeros(g->ctx, (tfl_dtype)g->in[i].dtype, g->in[i].rank, g->in[i].shape);
}
