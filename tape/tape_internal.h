/*
 * tape/tape_internal.h: the tape's records (entries for tracked values, nodes for recorded
 * ops), the backward-rule table and what rules share. Never installed.
 *
 * A value is tracked by its tensor id (tfl_tensor.id, unique in the ctx), never by pointer,
 * so a freed tensor whose record is reused is not mistaken for a watched one. Nodes are kept
 * in recording order, which is a topological order; the backward pass walks them in reverse.
 */
#ifndef TFL_TAPE_INTERNAL_H
#define TFL_TAPE_INTERNAL_H

#include "core_api/op_api.h" /* the framework's declared API for tape/ (tfl_framework_private) */

#include <tapeflow/tape.h>

/** One input of a recorded op. */
typedef struct tfl__tape_in {
    int32_t entry;               /* the tape's entry of this input; -1: a constant */
    uint8_t dtype, rank;
    int64_t shape[TFL_MAX_RANK];
    tfl_tensor *saved;           /* kept for the rule (a snapshot for a variable), or NULL */
} tfl__tape_in;

typedef union tfl__any_attrs {
    tfl__reduce_attrs reduce;
    tfl__axis_attrs axis;
    tfl__scalar_attrs scalar;
    tfl__matmul_attrs matmul;
    tfl__transpose_attrs transpose;
    tfl__slice_attrs slice;
    tfl__pad_attrs pad;
    tfl__segment_attrs segment;
    tfl__batch_norm_attrs batch_norm;
    tfl__layer_norm_attrs layer_norm;
    tfl__softmax_attrs softmax;
    tfl__dropout_attrs dropout;
    tfl__window_attrs window;
} tfl__any_attrs;

/** A recorded op. */
typedef struct tfl__tape_node {
    tfl__op_id op;
    int n_in;
    int64_t first_in;            /* its inputs are tape->ins[first_in ..] */
    int32_t out_entry;
    tfl_tensor *out_saved;       /* the output, when the rule uses it */
    tfl__any_attrs attrs;
} tfl__tape_node;

/** A tracked value: a watched tensor or the output of a recorded op. */
typedef struct tfl__tape_entry {
    uint64_t id;
    int32_t node;                /* the node that made it; -1: watched */
    uint8_t mark;                /* backward scratch: 1 depends on a source, 2 is a source */
    tfl_tensor *grad;            /* backward scratch: the gradient summed so far */
} tfl__tape_entry;

struct tfl_tape {
    tfl__ctx_obj obj;            /* first: the handle's magic (TFL__MAGIC_TAPE); not linked */
    tfl_ctx *ctx;
    unsigned flags;
    bool recording;
    bool used;                   /* a gradient was taken */
    bool failed;                 /* recording ran out of memory: gradients are refused */
    tfl_tape *next;              /* the ctx's live tapes, newest first */
    tfl__tape_entry *entries;
    int32_t n_entries, cap_entries;
    int32_t *slots;              /* open addressing, id -> entry index + 1 (0: empty) */
    uint32_t cap_slots;          /* a power of two, > 2 * n_entries */
    tfl__tape_node *nodes;
    int64_t n_nodes, cap_nodes;
    tfl__tape_in *ins;
    int64_t n_ins, cap_ins;
};

/** The tape module's state in a ctx (ctx->tapes). */
typedef struct tfl__tapes {
    tfl_tape *live;              /* newest first */
    tfl_tape spare;              /* only its arrays: those of a freed tape, which the next
                                    begin takes (no allocation in a loop) */
} tfl__tapes;

/** Releases every tensor the tape keeps and empties it (its arrays stay for reuse). */
void tfl__tape_clear(tfl_tape *tape);
/** The entry of id, or -1. */
int32_t tfl__tape_find(const tfl_tape *tape, uint64_t id);

/* ---- backward rules (rules.c and rules_*.c) ----------------------------------------------- */

/** One call of a backward rule. */
typedef struct tfl__grad_call {
    tfl_ctx *ctx;
    tfl__op_id op;
    const tfl__any_attrs *attrs;
    int n_in;
    const tfl__tape_in *in;      /* dtypes, shapes, and the tensors the rule asked to keep */
    const bool *need;            /* need[i]: input i's gradient is wanted */
    const tfl_tensor *out;       /* the op's output, when the rule asked to keep it */
    const tfl_tensor *dy;        /* the gradient flowing into the output */
    tfl_tensor **dx;             /* the rule sets dx[i] for each needed input */
} tfl__grad_call;

/**
 * A rule computes dx[i] for the needed inputs with ordinary ops, so a tape recording the
 * backward pass differentiates it again. Ops return NULL on NULL input, so a rule is
 * straight-line code: a failure anywhere leaves a needed dx[i] NULL, which the caller reports.
 */
typedef void (*tfl__grad_fn)(const tfl__grad_call *g);

#define TFL_SAVE_IN(i) (1u << (i))
#define TFL_SAVE_OUT 0x80u

typedef struct tfl__grad_rule {
    tfl__grad_fn fn;
    uint16_t attrs_size;          /* bytes of the op's attrs struct to keep (0: none) */
    uint8_t saves[TFL_MAX_INPUTS]; /* saves[i]: what to keep when input i needs a gradient
                                      (TFL_SAVE_IN bits, TFL_SAVE_OUT); inputs past the
                                      last use the last entry */
} tfl__grad_rule;

extern const tfl__grad_rule tfl__grad_rules[TFL_OP_COUNT];

/* helpers rules share (rules.c) */

/** t summed down to input i's shape (undoes broadcasting). */
tfl_tensor *tfl__sum_to_input(const tfl__grad_call *g, const tfl_tensor *t, int i);
/** A scalar of t's dtype holding value. */
tfl_tensor *tfl__scalar_like(const tfl__grad_call *g, const tfl_tensor *t, double value);
/** conj(t) for complex t; t itself otherwise (no op). */
const tfl_tensor *tfl__cj(const tfl__grad_call *g, const tfl_tensor *t);
/** Zeros of input i's dtype and shape. */
tfl_tensor *tfl__zeros_like_input(const tfl__grad_call *g, int i);

/* rule families */
#define TFL_RULE(name) void tfl__grad_##name(const tfl__grad_call *g)
TFL_RULE(identity); TFL_RULE(cast); TFL_RULE(where); TFL_RULE(softmax);
TFL_RULE(log_softmax); TFL_RULE(attention_softmax); TFL_RULE(softmax_grad); /* rules_math.c */
TFL_RULE(sum); TFL_RULE(mean); TFL_RULE(max_min); TFL_RULE(matmul); TFL_RULE(fused_matmul);
TFL_RULE(reshape);
TFL_RULE(transpose); TFL_RULE(slice); TFL_RULE(concat); TFL_RULE(gather);
TFL_RULE(broadcast_to); TFL_RULE(pad); TFL_RULE(segment_sum);            /* rules_array.c */
TFL_RULE(softmax_xent); TFL_RULE(sparse_softmax_xent);
TFL_RULE(sparse_softmax_xent_grad);                                      /* rules_loss.c */
TFL_RULE(batch_norm); TFL_RULE(dropout); TFL_RULE(layer_norm); TFL_RULE(layer_norm_grad);
TFL_RULE(batch_norm_training); TFL_RULE(batch_norm_training_grad);
TFL_RULE(batch_norm_param_grad); TFL_RULE(layer_norm_param_grad);       /* rules_norm.c */
TFL_RULE(conv2d); TFL_RULE(conv2d_backprop_input); TFL_RULE(conv2d_backprop_filter);
TFL_RULE(max_pool); TFL_RULE(max_pool_grad); TFL_RULE(max_pool_grad_grad); TFL_RULE(avg_pool);
TFL_RULE(avg_pool_grad);                                                  /* rules_conv.c */

/* the elementwise ops of op_list.h's TFL_EW_LIST: a rule per line (rules_math.c, and
 * sigmoid_xent in rules_loss.c), except comparisons and logic; for D and DA lines the two
 * rules are generated (rules_ew.c) from the second derivative written with ops:
 * TFL_D2(fn) gives f''(x) for x (the op's input) as a tensor */
#define TFL_D2(name) tfl_tensor *tfl__d2_##name(const tfl__grad_call *g, const tfl_tensor *x)
#define TFL_EW_DECL_(ctx, id, nm, fn, kind, out, cpu, gpu, api, saves)                          \
    TFL_EW_DECL_##out(TFL_EW_DECL_##kind(fn))
#define TFL_EW_DECL_SAME TFL_EW_KEEP
#define TFL_EW_DECL_REAL TFL_EW_KEEP
#define TFL_EW_DECL_BOOL TFL_EW_DROP
#define TFL_EW_DECL_U(fn) TFL_RULE(fn);
#define TFL_EW_DECL_UA TFL_EW_DECL_U
#define TFL_EW_DECL_B TFL_EW_DECL_U
#define TFL_EW_DECL_D(fn) TFL_RULE(fn); TFL_RULE(fn##_grad); TFL_D2(fn);
#define TFL_EW_DECL_DA TFL_EW_DECL_D
TFL_EW_LIST(TFL_EW_DECL_, ~)

#endif /* TFL_TAPE_INTERNAL_H */
