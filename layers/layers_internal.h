/*
 * layers/layers_internal.h: the layer and model records and the functions the files of
 * layers/ share (layers, models, fit's sums), by file from the bottom up. Never installed.
 */
#ifndef TFL_LAYERS_INTERNAL_H
#define TFL_LAYERS_INTERNAL_H

#include "core_api/module_api.h" /* framework's API for modules (tfl_framework_private) */

#include <tapeflow/model.h>
#include <tapeflow/tape.h>

#define TFL__NAME_MAX 128
#define TFL__LAYER_VARS 8 /* MultiHeadAttention: four kernels and four biases */

struct tfl_layer {
    tfl__ctx_obj obj;              /* linked to ctx while alive */
    tfl_ctx *ctx;
    tfl_layer_spec spec;           /* defaults filled in; spec.name points at name, and
                                      spec.kernel_init / bias_init at init[0] / init[1] */
    tfl_initializer init[2];       /* copies of the spec's initializers (their tensors retained) */
    char name[TFL__NAME_MAX];
    tfl_model *owner;              /* the model that frees it, or NULL */
    bool built;
    bool fresh;                    /* built by the tfl_model_build in progress */
    int64_t in_feature;            /* the last input dimension it was built for (Dense, Conv2D,
                                      BatchNormalization); -1 when not checked */
    tfl_tensor *vars[TFL__LAYER_VARS]; /* by the kind's order (see layer.c) */
    int n_vars;
    uint64_t calls;                /* Dropout: calls in training mode (mixed into the seed) */
    int64_t key_dim;               /* MultiHeadAttention: spec.key_dim, or features / heads
                                      when it is 0 (set with the variables) */
};

/* The model's input among a layer's inputs (tfl_model_input): a handle that is not a layer
 * (tfl__obj_check of a layer refuses it), with its ctx after the header as every handle. */
#define TFL__MAGIC_MODEL_INPUT 0x696e7074u /* "inpt" */
typedef struct tfl__model_input {
    tfl__ctx_obj obj;
    tfl_ctx *ctx;
    tfl_model *model;
} tfl__model_input;

/* Where layer i of a model takes its inputs from: n_in 0, the previous layer (or the model's
 * input for the first); otherwise in[0..n_in), each a layer index below i, TFL__FROM_INPUT
 * or TFL__FROM_GONE (that layer was freed). */
#define TFL__FROM_INPUT (-1)
#define TFL__FROM_GONE (-2)
typedef struct tfl__node {
    int n_in;
    int in[TFL_MAX_LAYER_INPUTS];
} tfl__node;

struct tfl_model {
    tfl__ctx_obj obj;
    tfl_ctx *ctx;
    char name[TFL__NAME_MAX];
    tfl_layer **layers;
    tfl__node *nodes;              /* one per layer */
    int n_layers, cap_layers;
    tfl__model_input input;
    tfl_optimizer *optimizer;      /* borrowed */
    tfl_loss_kind loss;
    unsigned metrics;
    int in_rank;                   /* the input shape of the build or first call (0: none) */
    int64_t in_shape[TFL_MAX_RANK];
    char *summary;                 /* the last tfl_model_summary's text */
    tfl_tensor **train_vars;       /* scratch of fit: trainable variables and their grads */
    tfl_tensor **grads;
    int n_train_vars, cap_train_vars;
    struct tfl__fit_sums *running_fit; /* fit's sums while it runs (fit_sums.c), else NULL */
    struct tfl__step_graph *graph;     /* fit's recorded step (fit.c), while fit runs */
};

/* liveness of the handles (a freed one records MISUSE naming `what`, see tfl__obj_check) */
static inline bool tfl__layer_alive(const tfl_layer *l, const char *what)
{
    return tfl__obj_check(l->ctx, &l->obj, TFL__MAGIC_LAYER, what);
}
static inline bool tfl__model_alive(const tfl_model *m, const char *what)
{
    return tfl__obj_check(m->ctx, &m->obj, TFL__MAGIC_MODEL, what);
}

/*
 * The files of layers/ read bottom-up: a file calls only functions of the files on the lines
 * above it (tests/layering/check_layers_order.sh enforces it). The datasets' files come first
 * (the levels dataset_internal.h lists), then:
 *   0 layer_base.c       kinds' names, unique names, a layer's variable list, a model's list
 *   1 layer_spatial.c    the kinds built on conv2d, pooling, batch_norm and dropout
 *   2 layer_attention.c  MultiHeadAttention
 *   3 layer_call.c       each kind's shape, variables and forward pass
 *   4 layer.c            specs, create, free, build, call
 *   5 layer_merge.c      Add, Concatenate, Multiply; the calls with several inputs
 *   6 model_graph.c      a model's layer graph
 *   7 model.c            the model: build, call, summary, compile, losses
 *   8 fit_sums.c         fit's sums
 *   9 callbacks.c fit.c generate.c tensorboard.c train_state.c data_parallel.c
 * The declarations below follow that order.
 */

/* layer_base.c */
/** The default name of a kind's layers ("dense"). */
const char *tfl__layer_kind_base(tfl_layer_kind kind);
/** Whether kind is Add, Concatenate or Multiply (2 or more inputs). */
bool tfl__layer_is_merge(tfl_layer_kind kind);
/** Whether name is taken by a live layer (layers true) or model of ctx. */
bool tfl__layer_name_taken(tfl_ctx *ctx, const char *name, bool layers);
/** Writes a unique name base, base_1, base_2, ... into out. */
void tfl__unique_name(tfl_ctx *ctx, const char *base, bool layers, char out[TFL__NAME_MAX]);
/** Checks a user-given name: non-empty, < 128 bytes, no '/' or ':', not taken. */
bool tfl__check_name(tfl_ctx *ctx, const char *who, const char *name, bool layers);
/** A variable a layer makes: "<layer>/<what>", float32, its shape and initializer. */
typedef struct tfl__var_def {
    char what[32];
    int rank;
    int64_t shape[4];
    const tfl_initializer *init; /* NULL when only the shape is asked for */
    bool trainable;
} tfl__var_def;
/** Sets d[n] (rank <= 4); returns n + 1. */
int tfl__var_def_add(tfl__var_def *d, int n, const char *what, int rank, const int64_t *shape,
                     const tfl_initializer *init, bool trainable);
/** Makes the variable "<layer>/<what>" (float32) and appends it to l's list. */
bool tfl__layer_add_var(tfl_layer *l, const char *what, int rank, const int64_t *shape,
                        const tfl_initializer *init, bool trainable);
/** Appends l (checked: alive, of ctx, in no model, its count of inputs) with node nd. */
tfl_status tfl__model_add_node(tfl_model *m, tfl_layer *l, const tfl__node *nd);
/** Takes l out of m's list of layers; the later nodes' input indices follow (an input that
 * was l becomes TFL__FROM_GONE). */
void tfl__model_take_out(tfl_model *m, tfl_layer *l);

/* layer_spatial.c: the kinds built on conv2d, pooling, batch_norm and dropout */
tfl_tensor *tfl__conv_forward(tfl_layer *l, const tfl_tensor *x);
tfl_tensor *tfl__pool_forward(tfl_layer *l, const tfl_tensor *x);
tfl_tensor *tfl__dropout_forward(tfl_layer *l, const tfl_tensor *x);
tfl_tensor *tfl__batch_norm_forward(tfl_layer *l, const tfl_tensor *x, bool training);

/* layer_attention.c: MultiHeadAttention's variables for features f, and self-attention */
/** Appends the layer's variables (kernels kinit, biases binit) to d; returns their count. */
int tfl__attention_var_defs(const tfl_layer *l, int64_t f, const tfl_initializer *kinit,
                            const tfl_initializer *binit, tfl__var_def *d);
tfl_tensor *tfl__attention_forward(tfl_layer *l, const tfl_tensor *x, bool training);

/* layer_call.c */
/** Output shape of the layer's kind for an input shape (batch first, may be -1); -1 with the
 * error kept. Checks the input against a built layer. */
int tfl__layer_shape(tfl_layer *l, int rank, const int64_t *shape, int64_t *out);
/** Whether the variables the kind would make for this (checked) input shape can exist: at
 * most INT64_MAX elements and PTRDIFF_MAX bytes each (tfl__check_new); false with the
 * error kept. */
bool tfl__layer_vars_fit(tfl_layer *l, int rank, const int64_t *shape);
/** Makes the kind's variables for an input shape already checked by tfl__layer_shape. */
tfl_status tfl__layer_make_vars(tfl_layer *l, int rank, const int64_t *shape);
/** Checks x's dtype for the layer's kind (floating; integer ids for Embedding). */
bool tfl__layer_check_dtype(tfl_layer *l, const tfl_tensor *x);
/** The forward pass of a built layer whose input was checked. */
tfl_tensor *tfl__layer_forward(tfl_layer *l, const tfl_tensor *x, bool training);
/** act(x) */
tfl_tensor *tfl__activate(tfl_ctx *ctx, tfl_activation act, const tfl_tensor *x);

/* layer.c */
/** Releases the layer's variables: unbuilt again. */
void tfl__layer_unbuild(tfl_layer *l);
/** tfl__layer_forward in a frame of its own; the result goes to the caller's frame. */
tfl_tensor *tfl__in_frame_forward(tfl_layer *l, const tfl_tensor *x, bool training);

/* layer_merge.c: Add, Concatenate, Multiply */
/** The merge's output shape for n inputs; -1 with the error kept. */
int tfl__merge_shape(tfl_layer *l, int n, const int *ranks, const int64_t *const *shapes,
                     int64_t *out);
/** The merge's forward pass on inputs whose shapes were checked. */
tfl_tensor *tfl__merge_forward(tfl_layer *l, int n, const tfl_tensor *const *xs);

/* model_graph.c: a model's layer graph */
/** The input indices of layer i (TFL__FROM_INPUT, TFL__FROM_GONE, or an earlier layer) into
 * in[TFL_MAX_LAYER_INPUTS]; returns their count. */
int tfl__node_inputs(const tfl_model *m, int i, int *in);
/** The model's input shape, then every layer's output shape in ranks[0..n_layers) and
 * shapes[0..n_layers) (host arrays the caller frees with tfl__host_free); false with the
 * error kept (naming the layer). */
bool tfl__model_shapes(tfl_model *m, int rank, const int64_t *shape, int **ranks,
                       int64_t (**shapes)[TFL_MAX_RANK]);
/** The forward pass: every layer on its inputs; the last one's output (frame-owned). */
tfl_tensor *tfl__graph_call(tfl_model *m, const tfl_tensor *x, bool training);
/** Layer i's inputs' names ("input, conv2d_1") into buf (the summary's Connected to). */
void tfl__node_text(const tfl_model *m, int i, char *buf, size_t size);

/* fit_sums.c: the epoch's sums of fit, on the host or (tfl_fit_opts.sync_every) the device */

/** The state of one fit: zero it, set `every` and `model`. */
typedef struct tfl__fit_sums {
    tfl_model *model;
    int64_t every;          /* tfl_fit_opts.sync_every */
    bool decided;           /* on_device is set (at the epoch's first trained step) */
    bool on_device;         /* this epoch's sums are device tensors */
    bool dirty;             /* steps were added since the last read */
    bool ever_read;         /* a read happened in this fit */
    bool loss_read;         /* the current step's loss was read */
    tfl_tensor *sum, *correct; /* float64 scalars on the device (owned), or NULL */
    tfl_tensor *loss;       /* the current step's mean loss, the step's frame's, or NULL */
    tfl_tensor *bs[2];      /* batch sizes as float64 scalars on the device (owned) */
    int64_t bv[2];
    double host_sum, host_correct; /* on the host path: the sums; else at the last read */
    double last_loss;       /* the last loss read */
    tfl_step_logs *sl;      /* the current step's logs while its callbacks run */
    int64_t reads;          /* host reads of figures in this fit */
} tfl__fit_sums;

/** A new epoch's sums, starting from sum0 and correct0 (a resumed epoch's). */
void tfl__fit_sums_epoch(tfl__fit_sums *fs, double sum0, double correct0);
/** Decides at the epoch's first trained step where its sums live: the device when `every` > 0
 * and loss is on a device that is not the host's. */
bool tfl__fit_sums_on_device(tfl__fit_sums *fs, const tfl_tensor *loss);
/** Adds a trained step: mean loss `loss` of b examples and `correct` (a float64 scalar
 * tensor, or NULL) into the device sums, with ops. */
tfl_status tfl__fit_sums_add(tfl__fit_sums *fs, const tfl_tensor *loss, int64_t b,
                             const tfl_tensor *correct);
/** Reads the device sums (when the step is summed) and the step's loss into sl in one host
 * read; sl->loss_stale becomes false. */
tfl_status tfl__fit_sums_read(tfl__fit_sums *fs, tfl_step_logs *sl);
/** The epoch's sums on the host (a last read when needed); the device sums are let go. */
tfl_status tfl__fit_sums_end(tfl__fit_sums *fs, double *sum, double *correct);
/** Releases what fs holds. */
void tfl__fit_sums_free(tfl__fit_sums *fs);
/** *acc = *acc + v cast to float64, as device tensors on v's device (evaluate's sums): *acc is
 * owned, a float64 scalar made there holding 0 when NULL. */
tfl_status tfl__device_accumulate(tfl_ctx *ctx, tfl_tensor **acc, const tfl_tensor *v);
/** Reads n scalars (any device, any real dtype) into out as doubles, in one host read when
 * they are on one device (a frame is pushed for the temporaries). */
tfl_status tfl__read_scalars(tfl_ctx *ctx, int n, const tfl_tensor *const *t, double *out);

#endif /* TFL_LAYERS_INTERNAL_H */
