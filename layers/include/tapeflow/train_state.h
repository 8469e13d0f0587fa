/*
 * tapeflow/train_state.h: training checkpoints for an exact resume. One safetensors file
 * (<tapeflow/checkpoint.h>) holds:
 *   - every variable of the model by name (BatchNormalization's moving statistics included)
 *     and every variable of its optimizer (slots, per-variable "step" slots, iterations);
 *   - "_tapeflow/rng"            int64 (2): the context's random stream (seed, calls);
 *   - "_tapeflow/dropout/<layer>" int64 (): each Dropout layer's call count;
 *   - "_tapeflow/position"       int64 (4): epoch, batch within it, step, shuffle seed;
 *   - "_tapeflow/progress"       int64 (4): the partial epoch's sums (tfl_epoch_progress), as
 *                                the bit patterns of float64 (loss_sum, correct) and counts;
 *   - "_tapeflow/early_stopping" int64 (4), when one is given: best (float64 bits),
 *                                best_epoch, wait, stopped_epoch;
 *   - "_tapeflow/history"        int64 (epochs, 9), when one is given: each tfl_epoch_logs
 *                                (float64 bits of its doubles);
 *   - "__metadata__": "tapeflow.weights" (the model's variable names, one a line: what
 *     tfl_ckpt_export keeps), "tapeflow.step", "tapeflow.epoch", the caller's entries (the
 *     resolved config).
 * Floating state is kept as int64 bit patterns so that it round-trips exactly and so that an
 * Inf "best" (no epoch yet) does not trip the non-finite guard, which is meant for the model.
 * The modules' state is reached through their public API only (tfl_model_variables,
 * tfl_optimizer_variables, tfl_ctx_rng_state, tfl_layer_rng_calls).
 *
 * Resuming: make the context, model and optimizer as before, tfl_model_build, then
 * tfl_train_state_restore, then tfl_model_fit with tfl_fit_opts_resume(opts, &state): the
 * run continues bit for bit (variables, slots, counters, RNG, dropout masks, data order,
 * epoch figures, history, early stopping).
 */
#ifndef TAPEFLOW_TRAIN_STATE_H
#define TAPEFLOW_TRAIN_STATE_H

#include <signal.h>

#include <tapeflow/checkpoint.h>
#include <tapeflow/model.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Where training stands, beside the variables. */
typedef struct tfl_train_state {
    int epoch;                          /* the epoch in progress (0-based) */
    int64_t batch;                      /* its batches already trained */
    int64_t step;                       /* steps fit has run in all */
    uint64_t shuffle_seed;              /* fit's seed as given (0: the context's) */
    tfl_epoch_progress progress;        /* the epoch's sums so far */
    tfl_early_stopping *early_stopping; /* optional: saved and restored (resume set) */
    tfl_history *history;               /* optional: saved; restored into its storage */
} tfl_train_state;

/**
 * Saves the model's and its optimizer's variables and `state` to `path` (atomic, durable;
 * opts as tfl_ckpt_save's: extra metadata such as the config, flags). The optimizer's slots
 * are made first when they do not exist yet (tfl_optimizer_build: what the first step would
 * make), so every training checkpoint has them.
 * Errors: FAILED_PRECONDITION (the model is not built), tfl_ckpt_save's (a NaN or Inf in a
 * variable without TFL_CKPT_ALLOW_NONFINITE, duplicate names, I/O).
 */
TFL_API tfl_status tfl_train_state_save(tfl_model *model, const char *path,
                                        const tfl_train_state *state,
                                        const tfl_ckpt_save_opts *opts);

/**
 * Restores what tfl_train_state_save wrote into a built model (with the same optimizer
 * options), the context's RNG, the Dropout layers, and `state` (its early_stopping and history,
 * when set, receive theirs; a history keeps at most cap epochs, count says how many there
 * were). The optimizer's slots are made first when missing (zeros, as its first step would
 * make them); then everything is read and checked before anything changes: on error no
 * variable, counter, RNG state, Dropout layer or `state` field has changed.
 * Errors: tfl_ckpt_restore's (missing, unexpected or mismatched variables), DATA_LOSS (state
 * tensors of the wrong dtype or shape, a Dropout layer's count missing), FAILED_PRECONDITION
 * (the model is not built or has no optimizer).
 */
TFL_API tfl_status tfl_train_state_restore(tfl_model *model, const char *path,
                                           tfl_train_state *state);

/** `opts` with initial_epoch, initial_batch, initial_step, initial_progress, seed and
 * append_history set from a restored state. */
TFL_API tfl_fit_opts tfl_fit_opts_resume(tfl_fit_opts opts, const tfl_train_state *state);

/**
 * The step-checkpoint callback: after every `every_steps` steps, and after the step during
 * which *request became nonzero (an application's SIGINT/SIGTERM handler sets it), saves a
 * training checkpoint through the manager (tfl_ckpt_manager_path, tfl_train_state_save,
 * tfl_ckpt_manager_commit). After a requested save *request is cleared and, with
 * stop_on_request, fit stops there (in the middle of the epoch). The saved progress is the
 * step's exact sums: read from the device when fit left them there (tfl_step_logs_read).
 * A periodic save that falls on an epoch's last step is made at that epoch's end instead
 * (this callback's on_epoch_end; its state: the next epoch, batch 0), so that a resume does
 * not run the epoch's end again; put the early-stopping callback before this one.
 */
typedef struct tfl_step_checkpoint {
    tfl_ckpt_manager *manager;      /* required */
    int64_t every_steps;            /* > 0: periodic saves; 0: on request only */
    volatile sig_atomic_t *request; /* optional */
    bool stop_on_request;
    uint64_t shuffle_seed;               /* fit's seed, recorded in the state */
    tfl_early_stopping *early_stopping;  /* optional, saved with the state */
    tfl_history *history;                /* optional: the one given to fit */
    const tfl_ckpt_save_opts *save_opts; /* optional */
    int64_t saved;                       /* state: checkpoints written */
    int64_t last_step;                   /* state: the step of the last one (-1: none) */
    int64_t epoch_end_step;              /* state: a save waiting for the epoch's end (-1) */
} tfl_step_checkpoint;
TFL_API tfl_callback tfl_step_checkpoint_callback(tfl_step_checkpoint *c);

/** The model's variables alone ("weights only", for shipping into an application) to a
 * checkpoint; restore them with tfl_model_restore_weights. Errors: tfl_ckpt_save's. */
TFL_API tfl_status tfl_model_save_weights(tfl_model *model, const char *path,
                                          const tfl_ckpt_save_opts *opts);
/** Restores a built model's variables by name (strict: tfl_ckpt_restore with no options,
 * except that a training checkpoint's optimizer and "_tapeflow/" tensors are ignored when
 * `allow_unexpected`). */
TFL_API tfl_status tfl_model_restore_weights(tfl_model *model, const char *path,
                                             bool allow_unexpected);

/** A saver for tfl_checkpoint_hook (model.h's ModelCheckpoint): the model's weights with
 * tfl_model_save_weights; `user` is NULL or a const tfl_ckpt_save_opts *. */
TFL_API tfl_status tfl_checkpoint_hook_save_weights(tfl_model *model, const char *path, void *user);

#ifdef __cplusplus
}
#endif
#endif /* TAPEFLOW_TRAIN_STATE_H */
