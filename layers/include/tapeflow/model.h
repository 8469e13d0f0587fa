/*
 * tapeflow/model.h: the model (Keras's Sequential, and its functional API's layer graphs), its
 * losses and metrics, and
 * the training loop: tfl_model_fit / tfl_model_evaluate / tfl_model_predict with callbacks
 * (early stopping, a CSV log of the epochs, a checkpoint hook) and progress output.
 *
 *     tfl_model *m = tfl_model_new(ctx, "mlp");
 *     tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_FLATTEN});
 *     tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 256,
 *                                        .activation = TFL_ACT_RELU});
 *     tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 10});
 *     tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
 *     tfl_model_compile(m, tfl_optimizer_new(ctx, &o), TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
 *                       TFL_METRIC_ACCURACY);
 *     tfl_model_fit(m, train, &(tfl_fit_opts){.epochs = 5, .batch_size = 128,
 *                                             .shuffle = true, .seed = 1,
 *                                             .validation = test, .progress = stdout}, NULL);
 *
 * A graph (Keras's functional API): a layer added with tfl_model_add_from takes the outputs of
 * layers added before it, or the model's input (tfl_model_input); merges join them. A residual
 * block:
 *
 *     tfl_layer *in = tfl_model_add(m, &conv_a);              // from the previous layer
 *     tfl_model_add(m, &conv_b);
 *     tfl_model_add_from(m, &(tfl_layer_spec){.kind = TFL_LAYER_ADD}, 2,
 *                        (tfl_layer *[]){tfl_model_layer(m, tfl_model_num_layers(m) - 1), in});
 *
 * The last layer is the output; every other layer must feed a later one. A layer added with
 * tfl_model_add takes the previous layer's output, so a stack is a graph whose every layer
 * has that default, and its variables and checkpoints are the same as before graphs existed.
 *
 * A training step (what fit runs per batch, and what examples/custom_loop.c writes by
 * hand): in a frame, a non-persistent tape records logits = call(x, training = true) and
 * loss = mean over the batch of the loss per example; the gradients of loss with respect
 * to the trainable variables go to tfl_optimizer_apply, which updates them in place. The
 * frame is popped, so a step keeps nothing. Metrics are means over the examples seen in
 * the epoch (the last, smaller batch weighs by its size).
 *
 * Reproducibility: the same ctx seed, model, data and fit options give the same losses on
 * every run (datasets shuffle with their own seeded Philox order; initializers and dropout
 * take the context's streams or their own seeds; kernels do not depend on timing).
 *
 * Models belong to their context: those still alive at tfl_ctx_free are freed with it.
 */
#ifndef TAPEFLOW_MODEL_H
#define TAPEFLOW_MODEL_H

#include <stdio.h>

#include <tapeflow/base.h>
#include <tapeflow/data.h>
#include <tapeflow/layers.h>
#include <tapeflow/optim.h>
#include <tapeflow/summary.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tfl_model tfl_model;

/** Losses per example, then averaged over the batch (Keras's default reduction). Every loss
 * takes the model's raw outputs (logits), Keras's from_logits=True: a model ending in a
 * softmax or sigmoid activation would apply it twice. */
typedef enum tfl_loss_kind {
    TFL_LOSS_NONE = 0,
    /* -log softmax(logits)[label]: integer labels, logits (batch, classes) */
    TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
    /* -sum(y log softmax(logits)): one-hot or soft labels of the logits' shape */
    TFL_LOSS_CATEGORICAL_CROSSENTROPY,
    /* mean over the last axis of sigmoid cross-entropy from logits (labels in [0, 1]) */
    TFL_LOSS_BINARY_CROSSENTROPY,
    /* mean over the last axis of (y - pred)^2 */
    TFL_LOSS_MEAN_SQUARED_ERROR,
    TFL_LOSS_END
} tfl_loss_kind;

/** Keras's name of a loss ("sparse_categorical_crossentropy"); "?" out of range. */
TFL_API const char *tfl_loss_name(tfl_loss_kind kind);

/**
 * The loss per example (shape: pred's shape without its last axis) of `pred` against `labels`; labels are
 * integer class ids for SPARSE_CATEGORICAL_CROSSENTROPY (int32 or int64, shape of pred
 * without its last axis) and of pred's dtype and shape otherwise (an int32 or int64 label
 * vector is one-hot encoded for CATEGORICAL_CROSSENTROPY, converted for the other two).
 * Returns: frame-owned, or NULL with the error kept (shape and dtype errors name both).
 */
TFL_API tfl_tensor *tfl_loss_per_example(tfl_ctx *ctx, tfl_loss_kind kind,
                                         const tfl_tensor *pred, const tfl_tensor *labels);

/** tfl_model_compile's metrics (flags) */
#define TFL_METRIC_ACCURACY 1u /* argmax(pred) == label (binary: (pred > 0) == (label > 0.5)) */

/** Makes an empty model. name NULL: "sequential" (made unique as layers are).
 * Errors: INVALID_ARGUMENT (a bad or taken name), RESOURCE_EXHAUSTED. */
TFL_API tfl_model *tfl_model_new(tfl_ctx *ctx, const char *name);

/** Appends a new layer made from spec (see tfl_layer_new); the model owns it. Returns the
 * layer (borrowed) or NULL; on error the model is unchanged. */
TFL_API tfl_layer *tfl_model_add(tfl_model *model, const tfl_layer_spec *spec);

/** Appends an existing layer, which the model then owns (and frees). A layer in another
 * model is INVALID_ARGUMENT; a layer of another context, or one already freed, is MISUSE
 * (base.h); a NULL layer keeps the earlier error. */
TFL_API tfl_status tfl_model_add_layer(tfl_model *model, tfl_layer *layer);

/**
 * The handle that stands for the model's input among tfl_model_add_from's inputs (Keras's
 * Input): not a layer, other layer calls refuse it (MISUSE). Borrowed, valid while the model
 * lives; NULL for NULL.
 */
TFL_API tfl_layer *tfl_model_input(tfl_model *model);

/**
 * Appends a new layer made from spec that takes the outputs of inputs[0..n): layers of this
 * model (added before it) or tfl_model_input(model). Merges (Add, Concatenate, Multiply) take
 * 2 to TFL_MAX_LAYER_INPUTS inputs, every other kind 1. n 0: the previous layer's output (the
 * model's input for the first layer), as tfl_model_add. Returns the layer (borrowed) or NULL;
 * on error the model is unchanged. Errors: INVALID_ARGUMENT (an input of another model, a
 * NULL input, a count the kind does not take), tfl_layer_new's.
 */
TFL_API tfl_layer *tfl_model_add_from(tfl_model *model, const tfl_layer_spec *spec, int n,
                                      tfl_layer *const *inputs);

/** tfl_model_add_layer with the inputs of tfl_model_add_from. */
TFL_API tfl_status tfl_model_add_layer_from(tfl_model *model, tfl_layer *layer, int n,
                                            tfl_layer *const *inputs);

/**
 * The inputs of layer i: writes at most cap of them to out (tfl_model_input(model) for the
 * model's input, NULL for a layer freed since) and returns how many there are (1 for a layer
 * taking the previous layer's output); -1 when i is out of range.
 */
TFL_API int tfl_model_layer_inputs(const tfl_model *model, int i, tfl_layer **out, int cap);

/** Whether a layer takes other inputs than the previous layer's output (a graph model). */
TFL_API bool tfl_model_is_graph(const tfl_model *model);

/** Number of layers; the i-th (borrowed), NULL out of range. */
TFL_API int tfl_model_num_layers(const tfl_model *model);
TFL_API tfl_layer *tfl_model_layer(const tfl_model *model, int i);
TFL_API const char *tfl_model_name(const tfl_model *model);
/** Whether a live model of ctx has this name (tfl_model_new would refuse it); false for NULL
 * ctx or name. */
TFL_API bool tfl_model_name_taken(tfl_ctx *ctx, const char *name);
/** The context the model belongs to (callbacks reach the ctx through it); NULL for NULL.
 * A freed model: MISUSE kept in its context, which is still returned (base.h). */
TFL_API tfl_ctx *tfl_model_ctx(const tfl_model *model);

/**
 * Makes every layer's variables for inputs of shape (rank, shape), batch axis first (it
 * may be -1): Keras's build / Input(shape). Needed before a summary shows shapes and before
 * restoring a checkpoint. Errors: a layer's shape error, naming the layer; INVALID_ARGUMENT
 * for a layer whose output no later layer takes (only the last is the model's output), or
 * whose input layer was freed.
 */
TFL_API tfl_status tfl_model_build(tfl_model *model, int rank, const int64_t *shape);

/** Runs the layers in order, each on its inputs; the last layer's output is the model's.
 * Returns a frame-owned tensor or NULL (the failing layer is named in the message). */
TFL_API tfl_tensor *tfl_model_call(tfl_model *model, const tfl_tensor *x, bool training);

/** The model's variables, layer after layer (see tfl_layer_variables); returns the count. */
TFL_API int tfl_model_variables(const tfl_model *model, tfl_var_filter filter, tfl_tensor **out,
                                int cap);
TFL_API int64_t tfl_model_param_count(const tfl_model *model, tfl_var_filter filter);

/**
 * The summary table (layer name and type, output shape, parameters, and for a graph the
 * layers each is connected to; then total, trainable and non-trainable parameters), as Keras
 * prints it. Unbuilt layers show "?".
 * Returns a string owned by the model, valid until the next summary call or the free;
 * NULL on RESOURCE_EXHAUSTED.
 */
TFL_API const char *tfl_model_summary(tfl_model *model);

/**
 * Sets what fit and evaluate train and measure. The optimizer is borrowed (the caller
 * frees it after the model, or the context does); NULL leaves evaluate/predict only.
 * Errors: INVALID_ARGUMENT (unknown loss, unknown metric flags), MISUSE (an optimizer of
 * another ctx or one already freed, base.h).
 */
TFL_API tfl_status tfl_model_compile(tfl_model *model, tfl_optimizer *optimizer,
                                     tfl_loss_kind loss, unsigned metrics);

/** One epoch's figures, as callbacks and the history see them. NaN where not measured. */
typedef struct tfl_epoch_logs {
    int epoch;             /* 0-based */
    int epochs;            /* of this fit */
    double loss, accuracy;
    double val_loss, val_accuracy;
    double seconds;        /* the epoch's training time (validation not included) */
    int64_t samples;       /* examples trained on in the epoch (skipped steps not counted) */
    int64_t skipped_steps; /* steps a gradient hook skipped (their variables untouched) */
} tfl_epoch_logs;

/** The sums of an epoch so far, from which its figures come (the epoch's loss is
 * loss_sum / samples): what a mid-epoch checkpoint keeps so that a resumed epoch reports the
 * same figures, bit for bit. */
typedef struct tfl_epoch_progress {
    double loss_sum;       /* sum over the trained batches of mean loss x batch size */
    double correct;        /* examples right (TFL_METRIC_ACCURACY) */
    int64_t samples;       /* examples trained on */
    int64_t skipped_steps;
} tfl_epoch_progress;

/** One training step, as on_step_end sees it. */
typedef struct tfl_step_logs {
    int epoch;             /* 0-based */
    int64_t batch;         /* 0-based, within the epoch */
    int64_t batches;       /* of the epoch */
    int64_t step;          /* steps fit has run so far in all its epochs, this one included */
    int64_t samples;       /* examples in this batch; with replicas, this replica's rows of
                              the global batch (its weight in an all-reduce; may be 0) */
    double loss;           /* the batch's mean loss (NaN or Inf where it was not finite); with
                              replicas, over this replica's rows (0 for 0 rows) */
    double seconds;        /* since the epoch began */
    bool skipped;          /* a gradient hook skipped it: variables and slots are untouched */
    tfl_epoch_progress progress; /* the epoch's sums after this step (on_step_end); with
                                    replicas, this replica's (see tfl_fit_opts.replicas) */
    /* True when fit did not read this step's figures from the device (tfl_fit_opts.sync_every):
     * then `loss` and progress.loss_sum / progress.correct hold the values of the last read
     * (an earlier step's, finite unless that loss was not), and tfl_step_logs_read gives the
     * step's own. samples, progress.samples and progress.skipped_steps are always exact.
     * False (every step on the CPU, and with sync_every 0): the figures are this step's.
     * Stale rather than known, so that logs a caller builds zeroed mean "known" as before. */
    bool loss_stale;
    /* The forward and backward passes ran from a recording (tfl_fit_opts.step_graphs). */
    bool replayed;
} tfl_step_logs;

/**
 * From a callback of a running fit: *out is *logs with this step's loss and progress sums,
 * read from the device now when logs->loss_stale (one host synchronisation; fit keeps what
 * it read, so later calls and later callbacks of the same step see it without a new read).
 * In on_gradients the loss is read; the sums are the epoch's after the step, in on_step_end.
 * A logs that is not stale is copied as it is. A callback that needs the figures of every
 * step it acts on (a checkpoint it saves, a scalar it writes) calls this on those steps only.
 * Errors: INVALID_ARGUMENT (NULL), FAILED_PRECONDITION when logs->loss_stale and logs is not
 * the current step of a fit of this model (the values are gone), a read's error.
 */
TFL_API tfl_status tfl_step_logs_read(tfl_model *model, const tfl_step_logs *logs,
                                      tfl_step_logs *out);

/**
 * A callback: any function may be NULL. Return TFL_OK to go on; any other status stops fit
 * with that status (the message kept in ctx is the callback's to set). on_train_end runs for
 * every callback whose on_train_begin succeeded (or that has none), also when fit fails, so
 * that it can release what it holds; a failing on_train_begin cleans up after itself.
 *
 * The training step's seams, in order: forward under a tape, gradients, on_gradients of
 * every callback, the optimizer's apply, on_step_end of every callback.
 *  - on_gradients(model, n, vars, grads, logs, user, skip) sees the n trainable variables
 *    and their gradients (NULL for an unconnected variable) before they are applied. It may
 *    replace grads[i] in place (an all-reduce, a clip) with a tensor of the same shape and
 *    dtype, owned by the step's frame; setting *skip leaves variables, slots and the step
 *    counter untouched for this step (the later hooks still run, logs->skipped says so).
 *    logs->loss is known; logs->skipped is what the earlier hooks decided.
 *  - on_step_end: setting *stop ends fit after this step, in the middle of an epoch: that
 *    epoch gets no validation and no on_epoch_end (history and on_train_end see the last
 *    whole epoch). Progress output, event files and step checkpoints go here.
 *  - on_epoch_end: setting *stop ends training after this epoch (early stopping).
 */
typedef struct tfl_callback {
    tfl_status (*on_train_begin)(tfl_model *model, void *user);
    tfl_status (*on_epoch_end)(tfl_model *model, const tfl_epoch_logs *logs, void *user,
                               bool *stop);
    tfl_status (*on_train_end)(tfl_model *model, const tfl_epoch_logs *last, void *user);
    void *user;
    tfl_status (*on_gradients)(tfl_model *model, int n, tfl_tensor *const *vars,
                               tfl_tensor **grads, const tfl_step_logs *logs, void *user,
                               bool *skip);
    tfl_status (*on_step_end)(tfl_model *model, const tfl_step_logs *logs, void *user,
                              bool *stop);
} tfl_callback;

/** The batch size of fit, evaluate and predict when they are given 0 (Keras's). */
#define TFL_DEFAULT_BATCH_SIZE 32

/**
 * Data parallelism (<tapeflow/distributed.h> fills this in; any other all-reduce can too):
 * `count` replicas (processes) train one model together, each on its shard of every global
 * batch, all with the same model, options, data and seed.
 */
typedef struct tfl_replicas {
    int index, count; /* this replica's shard (fit shards the training and validation data
                         with tfl_dataset_shard); 0 <= index < count */
    /* Adds values[0..n) across the replicas in place, in the same order on every replica
     * (an all-reduce of sums); TFL_OK or a status (with a message kept in the model's ctx,
     * else fit keeps one naming the sum). Fit calls it on every replica with the same n at
     * the same points: at the end of every epoch with the epoch's sums {loss_sum, correct,
     * samples} before the figures are computed, and after every validation with its sums
     * {loss_sum, correct, samples}. Never NULL. */
    tfl_status (*sum)(double *values, int n, void *user);
    void *user;
} tfl_replicas;

/** Options of tfl_model_fit; all-zero means defaults. */
typedef struct tfl_fit_opts {
    int epochs;                    /* 0 means 1 */
    int initial_epoch;             /* the first epoch's number (resuming); < epochs */
    int64_t batch_size;            /* 0: TFL_DEFAULT_BATCH_SIZE (32) */
    bool shuffle;                  /* a new order every epoch */
    uint64_t seed;                 /* the shuffle's seed; 0: the context's */
    bool drop_remainder;
    tfl_dataset *validation;       /* evaluated after each epoch when set */
    /* Progress: NULL prints nothing (the library never prints by itself). On a terminal a
     * bar with ETA, samples/s and the running loss, redrawn at most 10 times a second;
     * otherwise one line per epoch. */
    FILE *progress;
    const tfl_callback *callbacks;
    int n_callbacks;
    /* Resuming in the middle of an epoch (from a training checkpoint, <tapeflow/train_state.h>):
     * initial_batch batches of initial_epoch were trained already; fit seeks past them without
     * reading them (tfl_dataset_seek) and starts that epoch's sums from initial_progress and
     * its step count from initial_step. initial_batch may be the epoch's number of batches:
     * only the epoch's end (validation, on_epoch_end) is left. */
    int64_t initial_batch;         /* >= 0 */
    int64_t initial_step;          /* >= 0: tfl_step_logs.step continues from it */
    tfl_epoch_progress initial_progress;
    bool append_history;           /* keep history->count and add the epochs after it */
    /* Data parallelism; NULL: one process (nothing of the below happens). With replicas:
     *  - fit shards `train` and `validation` (tfl_dataset_shard(ds, index, count)) for its
     *    run and gives them back their own sharding when it returns (also on an error);
     *    batch_size is the global batch, and every replica takes the same steps: an empty
     *    shard (a last global batch of fewer rows than replicas) is a step too;
     *  - a step on 0 local rows runs no forward pass: its loss is 0, it weighs 0 in the sums,
     *    and on_gradients sees zero gradients of every trainable variable (their shapes)
     *    with logs->samples 0, then the apply runs as for any step, so hooks' collectives
     *    stay matched;
     *  - on_gradients never sees a NULL gradient (an unconnected variable's is zeros), so
     *    every replica's all-reduce takes the same list; the hook that all-reduces weighs
     *    each replica's gradients by logs->samples (its local rows): the global gradient is
     *    sum(samples_r · grad_r) / sum(samples_r);
     *  - what callbacks, the history and the progress line see at an epoch's end (loss,
     *    accuracy, val_loss, val_accuracy, samples) is global: sums reduced with
     *    replicas->sum, then divided. Per-step figures (tfl_step_logs: loss, samples,
     *    progress; the progress bar's running loss) stay this replica's. skipped_steps is
     *    this replica's count (hooks that decide after an all-reduce skip on all of them);
     *  - initial_progress holds the epoch's global sums of before the resume: replica 0
     *    starts from them, the others from 0 (initial_progress.skipped_steps: every one), so
     *    that the reduced figures count them once. A checkpoint that wants exact resumed
     *    figures saves the sums reduced across the replicas (a collective: on every replica);
     *  - every replica must take the same path: a callback that stops fit (on_step_end,
     *    on_epoch_end) or skips a step does so on every replica at the same step (decide from
     *    reduced figures: early stopping on val_loss is), or the others wait in their next
     *    collective; so does a replica whose fit fails: its caller ends the job (the
     *    `tapeflow` program aborts it through MPI).
     */
    const tfl_replicas *replicas;
    /* Host reads of the figures when the model lives on a device whose memory is not the
     * host's (a GPU): 0 reads the step's loss every step, as on the CPU (every step then
     * waits for the device). n > 0 keeps the epoch's loss sum and correct count on the device
     * (added with ops, in the order and precision of the host's sums, so the figures are the
     * same bit for bit) and reads them, with the step's loss, once every n steps: on the
     * steps whose tfl_step_logs.step is a multiple of n, the first step of the fit and the
     * last of every epoch; between those steps tfl_step_logs.loss_stale is true (see
     * tfl_step_logs_read). Ignored on a host device (the CPU), where reading costs nothing.
     * Callbacks that read figures on other steps (the non-finite guard, event files, step
     * checkpoints) read them with tfl_step_logs_read, at a synchronisation each.
     * Must be >= 0. */
    int64_t sync_every;
    /* Recorded steps on a device whose memory is not the host's (a GPU; ignored on the CPU,
     * whose kernels run as they are called). Once two steps in a row have the same batch
     * shapes, the next one's forward and backward passes (the loss and the gradients) are
     * recorded as they run; later steps of that shape replay the recording: on a CUDA GPU one
     * CUDA graph launched, without the per-op host work (placement, shapes, the tape). The
     * results are the plain steps' bit for bit. A batch of another shape (an epoch's last)
     * runs plainly; a new steady shape is recorded again. Work a replay would get wrong makes
     * the recording fail, and the steps stay plain (logged once at INFO, with the reason):
     * random values (Dropout), host reads of device values inside the pass, work on a second
     * device. The update, the callbacks and the metrics run as always after the replay.
     * A step replays only when nothing else holds what the replay writes (a gradient a hook
     * kept past its step, a snapshot of a variable the pass assigns, as BatchNormalization's
     * statistics): those steps run plainly and are recorded again.
     * Memory: the recording keeps the blocks of its step (about the step's peak) until fit
     * returns. tfl_step_logs.replayed tells which steps replayed. */
    bool step_graphs;
} tfl_fit_opts;

/** What tfl_model_fit returns: one entry per epoch run (caller-provided storage). */
typedef struct tfl_history {
    tfl_epoch_logs *logs;          /* room for `cap` epochs (may be NULL with cap 0) */
    int cap;
    int count;                     /* epochs run (also those beyond cap, which are not kept) */
} tfl_history;

/**
 * Trains the model on `train` (its batches: x float, y class labels or float targets, see
 * data.h's tfl_label_kind), epoch after epoch. The
 * dataset's batch size and order are set from opts at the start of every epoch. The
 * variables are built on the first batch. The validation data is checked (labels, example
 * shape) before any step. Batches go to the device scope's device, else to the model's
 * variables' device once they exist (a GPU, by placement); to a device that copies
 * asynchronously they are uploaded from two pinned buffers on a copy stream, overlapped with
 * the previous step's compute (the same values as tfl_dataset_next's).
 * Returns: TFL_OK (also when early stopping ends it), or the first error: a step's
 * (INVALID_ARGUMENT for labels that do not fit the loss, ...), a callback's status, or
 * FAILED_PRECONDITION when the model has no optimizer or loss, or INVALID_ARGUMENT for
 * bad options, training data that gives no batch, or real-valued targets (TFL_LABEL_VALUE)
 * with sparse_categorical_crossentropy (also tfl_model_evaluate's), or MISUSE for a dataset of another
 * context or one already freed, or an optimizer freed since tfl_model_compile (base.h). Data
 * parallelism: see tfl_fit_opts.replicas (INVALID_ARGUMENT for replicas with count < 1, an
 * index outside [0, count) or a NULL sum; the sum's failing status stops fit). A
 * failure leaves the trainable
 * variables and the optimizer as the last complete step left them (BatchNormalization's
 * moving statistics are updated in the forward pass, so a failing batch may have moved
 * them).
 */
TFL_API tfl_status tfl_model_fit(tfl_model *model, tfl_dataset *train, const tfl_fit_opts *opts,
                                 tfl_history *history);

/**
 * Mean loss and accuracy over `data` in inference mode (batches of batch_size, 0: TFL_DEFAULT_BATCH_SIZE, in
 * order: this sets data's batching, as tfl_dataset_batch does). loss/accuracy may be NULL; accuracy is NaN without TFL_METRIC_ACCURACY.
 * The batches go to the device scope's device, else to the model's variables' device (as in
 * fit and predict); on a device whose memory is not the host's the sums stay there and the
 * host reads them once, at the end (the same bits as sums read batch by batch).
 * Errors: FAILED_PRECONDITION (no loss compiled), the steps' errors.
 */
TFL_API tfl_status tfl_model_evaluate(tfl_model *model, tfl_dataset *data, int64_t batch_size,
                                      double *loss, double *accuracy);

/**
 * tfl_model_evaluate across replicas (data parallelism, see tfl_replicas): this replica
 * evaluates its shard of every batch (tfl_dataset_shard(data, index, count); data's own
 * sharding is given back after), then its sums {loss_sum, correct, samples} are added across
 * the replicas with replicas->sum, so every replica gets the figures of the whole data set.
 * Call it on every replica (the sum is a collective). replicas NULL: tfl_model_evaluate.
 * Errors: tfl_model_evaluate's; INVALID_ARGUMENT for bad replicas (count < 1, index outside
 * [0, count), a NULL sum); the sum's status.
 */
TFL_API tfl_status tfl_model_evaluate_replicated(tfl_model *model, tfl_dataset *data,
                                                 int64_t batch_size,
                                                 const tfl_replicas *replicas, double *loss,
                                                 double *accuracy);

/**
 * The model's outputs for every example of `data`, in order, in inference mode: a tensor
 * (examples, outputs...) owned by the innermost frame (or the caller without one).
 */
TFL_API tfl_tensor *tfl_model_predict(tfl_model *model, tfl_dataset *data, int64_t batch_size);

/** Frees the model and its layers (their variables are released). NULL is a no-op. A model
 * already freed: MISUSE kept in its context (base.h). */
TFL_API void tfl_model_free(tfl_model *model);

/* ---- callbacks ------------------------------------------------------------------------------ */

/** Keras's EarlyStopping: stops when `monitor` has not improved by more than min_delta for
 * `patience` epochs. Fill the settings, zero the rest, then pass tfl_early_stopping(&es). */
typedef struct tfl_early_stopping {
    const char *monitor;           /* "loss", "accuracy", "val_loss" (NULL), "val_accuracy" */
    double min_delta;              /* >= 0 */
    int patience;                  /* epochs without improvement to wait; >= 0 */
    bool restore_best_weights;     /* at the end of training (stopped early or not), copy
                                      back every variable of the best epoch (moving
                                      statistics too), as Keras 3 does */
    bool resume;                   /* keep best, best_epoch and wait as they are (restored from
                                      a training checkpoint) instead of starting over; the best
                                      weights of before the checkpoint are not kept */
    /* state, set by fit */
    double best;
    int best_epoch, wait, stopped_epoch; /* stopped_epoch: -1 when it did not stop */
    void *saved;                   /* the best weights' copies (freed at train end) */
} tfl_early_stopping;
TFL_API tfl_callback tfl_early_stopping_callback(tfl_early_stopping *es);

/** Keras's CSVLogger: a header "epoch,loss,accuracy,val_loss,val_accuracy,seconds" and one
 * line per epoch (empty fields for what is not measured); flushed every epoch. */
typedef struct tfl_csv_logger {
    const char *path;
    bool append;                   /* keep existing lines (no second header) */
    FILE *file;                    /* state, set by fit */
} tfl_csv_logger;
TFL_API tfl_callback tfl_csv_logger_callback(tfl_csv_logger *log);

/**
 * The checkpoint hook (Keras's ModelCheckpoint): after every `every` epochs (0 means 1),
 * and only when `monitor` improved if save_best_only, calls save(model, path, user) with
 * path = the template with "{epoch}" replaced by the 1-based epoch number. The saver is
 * what the checkpoint module provides (or the caller's own); a non-OK status stops fit.
 */
typedef struct tfl_checkpoint_hook {
    const char *path_template;     /* e.g. "ckpt/epoch-{epoch}.safetensors" */
    int every;
    bool save_best_only;
    const char *monitor;           /* as early stopping's; NULL: "val_loss" */
    tfl_status (*save)(tfl_model *model, const char *path, void *user);
    void *user;
    double best;                   /* state, set by fit */
    int saved;                     /* how many saves ran */
} tfl_checkpoint_hook;
TFL_API tfl_callback tfl_checkpoint_callback(tfl_checkpoint_hook *hook);

/**
 * The non-finite guard (a gradient hook; none of Keras, PyTorch or Lightning has it on by
 * default): before each step's update it checks the loss and the gradients' global norm
 * (tfl_global_norm: one pass over each gradient). On a NaN or an infinity, HALT stops fit
 * with INVALID_ARGUMENT naming the step, the epoch and batch (1-based) and the first
 * variable whose gradient is not finite, with every variable and slot as the last good
 * step left them; SKIP leaves variables, slots and the step counter untouched for that step
 * and counts it (here and in the epoch's logs, skipped_steps). A loss fit left on the device
 * (tfl_fit_opts.sync_every) is read (tfl_step_logs_read): the norm's read synchronises the
 * step anyway, so the guard costs one synchronisation a step with or without sync_every.
 */
typedef enum tfl_nonfinite_mode {
    TFL_NONFINITE_HALT = 0,
    TFL_NONFINITE_SKIP = 1,
} tfl_nonfinite_mode;
typedef struct tfl_nonfinite_guard {
    tfl_nonfinite_mode mode;
    int64_t skipped;               /* state: steps skipped so far */
    double last_norm;              /* state: the last checked step's global gradient norm */
    /* Data parallelism (NULL: one process): the guard's verdict is made collective through
     * replicas->sum (3 doubles a step: how many replicas saw a non-finite loss, or gradient,
     * and the sum of their indices), so every replica skips or halts the same step; without
     * it a non-finite loss on one replica (whose reduced gradients may be finite) would stop
     * that replica alone and leave the others waiting in the next collective. The halt's
     * error names the replica when one alone saw it ("on replica 1 of 2"). */
    const tfl_replicas *replicas;
} tfl_nonfinite_guard;
TFL_API tfl_callback tfl_nonfinite_guard_callback(tfl_nonfinite_guard *guard);

/**
 * TensorBoard logging (Keras's TensorBoard callback), through the fit loop's seams. Event
 * files go to <logdir>/train and, once a validation figure is measured, <logdir>/validation
 * (so TensorBoard draws training and validation as two runs in one chart). The x-axis is the
 * global step: g = base + the steps of this fit so far, base being initial_step or, when that
 * is 0, the optimizer's iterations at train begin (a run resumed from a checkpoint goes on
 * where it stopped). "This fit's steps" count from 1 also when the fit continues its step
 * count (tfl_fit_opts.initial_step): a resumed fit gives initial_step the same value.
 *  - at train begin: SessionLog{START} at base + 1 in each writer (TensorBoard drops the
 *    points an earlier run logged after the checkpoint it resumed from) and `text` (if set)
 *    under the tag "config";
 *  - at every global step g that is a multiple of `every_steps`, in train:
 *    "step/loss" (the batch's), "step/learning_rate" (the rate that step's apply used),
 *    "step/grad_norm" (the global norm sqrt(sum of squares) of the gradients as this
 *    callback's on_gradients sees them: put it after a clipping hook to see clipped norms)
 *    and "step/samples_per_second" (since the previous logged step of the epoch);
 *  - every epoch end, at g (a fit resumed from a checkpoint of an epoch's last step does
 *    that epoch's end again, at base: the same figures, before START's step): "epoch/loss"
 *    and "epoch/accuracy" in train, the val_ figures under the same tags in validation (a
 *    figure not measured is not written); with `histograms`, "weights/<variable>" of every
 *    trainable variable, and "gradients/<variable>" at the epoch's last step; both writers
 *    are flushed;
 *  - at train end: both writers closed (flushed).
 * logdir NULL disables it: nothing is made or written. A loss fit left on the device
 * (tfl_fit_opts.sync_every) is read on the logged steps only (tfl_step_logs_read; with
 * sync_every dividing every_steps, those are fit's own reads). Errors: the writers' (a
 * directory that cannot be made, a failed write), INVALID_ARGUMENT for every_steps < 0.
 */
typedef struct tfl_tensorboard {
    const char *logdir;            /* NULL: disabled */
    int64_t every_steps;           /* step scalars every k steps; 0: none */
    bool histograms;               /* weights and gradients once an epoch */
    int64_t initial_step;          /* base of the global step; 0: the optimizer's iterations */
    const char *text;              /* logged once at train begin (tag "config"); NULL: none */
    tfl_summary_writer_opts writer; /* flush interval (0: 10 s), file suffix, clock */
    /* state, set by fit */
    tfl_summary_writer *train, *validation;
    int64_t base, last_step; /* last_step: of this fit */
    int64_t fit_step0;       /* fit's step count before this fit's first step (-1: not seen) */
    double learning_rate, grad_norm; /* of the step being logged (NaN: not measured) */
    int64_t samples_since;
    double seconds_at_log;
} tfl_tensorboard;
TFL_API tfl_callback tfl_tensorboard_callback(tfl_tensorboard *tb);

#ifdef __cplusplus
}
#endif

#endif /* TAPEFLOW_MODEL_H */
