/*
 * tapeflow/run.h: a training run as a library call. A run trains what a config describes into
 * a run directory, and resumes it: everything `tapeflow train`, `eval`, `predict` and
 * `generate` do besides parsing arguments, printing and catching signals.
 *
 *     tfl_config *cfg = tfl_config_load(ctx, "configs/xor.yaml", NULL, 0, &st);
 *     tfl_run *run = tfl_run_open(cfg, &(tfl_run_opts){.on_event = show, .user = app}, &st);
 *     tfl_run_result res;
 *     st = tfl_run_train(run, &res);       // resumes from the newest checkpoint
 *     tfl_run_close(run);
 *     tfl_config_free(cfg);
 *
 * The run directory (opts.run_dir, default runs/<config name>) receives:
 *   config.yaml      the resolved config the run trains with;
 *   run.log          a line per start or resume, the config changes, the library's warnings;
 *   metrics.csv      a line per epoch (logging.metrics_csv elsewhere);
 *   checkpoints/     every checkpoint.every epochs (or checkpoint.every_steps steps), at the
 *                    end and when cancelled; checkpoint.keep of them (checkpoint.directory
 *                    elsewhere);
 *   train/, validation/  TensorBoard event files (unless logging.tensorboard is false);
 *   curves.svg       loss (and accuracy) per epoch, at the end of a complete run.
 * Training again resumes from the newest usable checkpoint (a damaged newer one is skipped
 * with a warning naming it). The config is compared with the one the checkpoint was trained
 * with: a run continues with changes to training.epochs, training.sync_every,
 * training.step_graphs, logging.* and
 * checkpoint.* only, unless opts.allow_config_change. Nothing of a run changes before its
 * checkpoint restored, and a run that fails before its first step leaves the directory as
 * it found it (a new one goes again).
 *
 * Several processes (data parallelism, `mpirun -np N`): give every process's run the same
 * communicator of the job (opts.comm, e.g. tfl_comm_world; borrowed). Each rank then trains
 * on its own device (tfl_comm_device of training.device: one rank per GPU; a DEVICE event
 * says which), rank 0's variables are broadcast, each rank trains on its shard of every global
 * batch (training.batch_size stays the global batch), the gradients are all-reduced
 * (training.allreduce_bucket_mb) before the non-finite guard and clipping see them, every rank
 * stops at the same step (a cancel on any rank stops all), and rank 0 alone writes the run
 * directory; tfl_run_evaluate shards its data and gives the global figures on every rank.
 * Every rank must make the same calls; a rank's error leaves the others waiting in a
 * collective, so a program ends the job on any error (tfl_comm_abort).
 *
 * While a run is open, its context logs through it: every line goes on to opts.log_fn (at
 * opts.log_level), and WARNING lines also to run.log and, as TFL_RUN_EVENT_WARNING, to
 * opts.on_event. tfl_run_close gives the context opts.log_fn back.
 */
#ifndef TAPEFLOW_RUN_H
#define TAPEFLOW_RUN_H

#include <tapeflow/comm.h>
#include <tapeflow/config.h>
#include <tapeflow/context.h>
#include <tapeflow/generate.h>
#include <tapeflow/model.h>

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tfl_run tfl_run;

/** What a run tells its application (tfl_run_opts.on_event). */
typedef enum tfl_run_event_kind {
    TFL_RUN_EVENT_NOTE,          /* a line about the run: where it resumes, its directory, ... */
    TFL_RUN_EVENT_WARNING,       /* a warning of the library (also in run.log) */
    TFL_RUN_EVENT_CONFIG_CHANGE, /* a key changed since the run began ("path: was -> now") */
    TFL_RUN_EVENT_STEP,          /* every logging.log_interval steps: `step` */
    TFL_RUN_EVENT_EPOCH,         /* an epoch ended: `epoch` */
    TFL_RUN_EVENT_DEVICE,        /* several ranks: the device this rank trains on, and why */
} tfl_run_event_kind;

typedef struct tfl_run_event {
    tfl_run_event_kind kind;
    const char *message;          /* one line, no newline */
    const tfl_step_logs *step;    /* STEP: the step's figures (read from the device) */
    const tfl_epoch_logs *epoch;  /* EPOCH */
} tfl_run_event;

typedef void (*tfl_run_event_fn)(void *user, const tfl_run_event *event);

/** Options of a run; all-zero means defaults. */
typedef struct tfl_run_opts {
    const char *run_dir;          /* NULL: runs/<config name> */
    bool allow_config_change;     /* resume although keys that change the training changed */
    FILE *progress;               /* fit's progress (a bar on a terminal, lines otherwise) */
    tfl_run_event_fn on_event;    /* NULL: none */
    void *user;                   /* passed to on_event */
    tfl_log_fn log_fn;            /* the context's log sink while the run is open, and after */
    void *log_user;
    tfl_log_level log_level;
    tfl_comm *comm;               /* several processes train the run (below); NULL: one */
} tfl_run_opts;

/** What tfl_run_train did. */
typedef struct tfl_run_result {
    bool refused;             /* the config changed keys that change the training: nothing ran */
    bool resumed;             /* from `checkpoint` */
    bool trained_already;     /* every epoch was done: nothing to train */
    bool cancelled;           /* tfl_run_cancel stopped it (its checkpoint saved when `saved`) */
    bool saved;               /* a checkpoint of the last step trained exists */
    int epochs;               /* epochs the run has now (all of them, resumed ones included) */
    int stopped_epoch;        /* cancelled: the epoch it stopped in (0-based) */
    int64_t steps;            /* steps the run has now */
    double seconds;           /* of this call's training */
    tfl_epoch_logs last;      /* the last epoch's figures (epochs > 0) */
    double test_loss, test_accuracy; /* on data.test (NaN without test data, or not measured) */
    bool skipped_steps;       /* on_nonfinite: skip skipped some */
    char checkpoint[4200];    /* resumed: the checkpoint it resumed from */
    char run_dir[4096];       /* the run directory */
    char metrics_csv[4200];   /* its metrics file */
    char event_file[4200];    /* the training event file ("" when none was written) */
    char curves[4200];        /* curves.svg of the run ("" when none was made) */
} tfl_run_result;

/**
 * Opens a run of a valid config (borrowed: free it after tfl_run_close): applies its context
 * settings (tfl_config_apply_context, training.device included) and builds its model,
 * optimizer and datasets. Nothing is written. Returns NULL with *status (optional) set:
 * the builders' errors (INVALID_ARGUMENT naming the config key and file, DATA_LOSS of a data
 * file, RESOURCE_EXHAUSTED), FAILED_PRECONDITION for an invalid config.
 */
TFL_API tfl_run *tfl_run_open(tfl_config *config, const tfl_run_opts *opts, tfl_status *status);

/**
 * Trains the run: resumes from the run directory's newest usable checkpoint (or starts),
 * writes the run directory, fits until training.epochs or tfl_run_cancel, saves the final
 * checkpoint and evaluates the test data. result (required) is filled in also on error.
 * Returns TFL_OK also when cancelled (result->cancelled) or refused (result->refused,
 * FAILED_PRECONDITION); errors: those of restoring (INVALID_ARGUMENT: a model that does not
 * fit the checkpoint), writing (FAILED_PRECONDITION naming the file) and training.
 */
TFL_API tfl_status tfl_run_train(tfl_run *run, tfl_run_result *result);

/**
 * Restores the trained model: the checkpoint `checkpoint` (an error when it is damaged, never
 * another one), or NULL: the run directory's newest usable one (a damaged newer one is skipped
 * with a warning). Its path goes to used[0..size) (optional), its step to *step (optional, -1
 * when unknown). Errors: NOT_FOUND (no usable checkpoint), tfl_model_restore_weights'.
 */
TFL_API tfl_status tfl_run_restore(tfl_run *run, const char *checkpoint, char *used, size_t size,
                                   int64_t *step);

/**
 * The restored model's loss and accuracy (NaN for a regression) on the config's test data
 * (else its validation data, else its training data); *which (optional) names it ("test",
 * "validation", "train") and *examples (optional) counts it.
 */
TFL_API tfl_status tfl_run_evaluate(tfl_run *run, double *loss, double *accuracy,
                                    const char **which, int64_t *examples);

/**
 * The restored model's outputs for the examples of a file read as the training data
 * (tfl_config_load_examples): a new tensor (n, outputs) the caller releases, or NULL. When
 * the file has the training data's label column, *labelled (optional) is set and *loss and
 * *accuracy (optional) get the figures on those labels.
 */
TFL_API tfl_tensor *tfl_run_predict(tfl_run *run, const char *path, bool *labelled, double *loss,
                                    double *accuracy);

/**
 * Writes outputs (tfl_run_predict's) to f as CSV, a header line then a line per example: for
 * a classifier (a cross-entropy loss) "class,p0,p1,..." with the class of highest probability
 * and the probabilities (softmax of the logits; sigmoid for binary cross-entropy), else
 * "y0,y1,..." with the values. Errors: INVALID_ARGUMENT (NULL, or outputs not of rank 2),
 * RESOURCE_EXHAUSTED, FAILED_PRECONDITION (a write to f failed).
 */
TFL_API tfl_status tfl_run_write_predictions(tfl_run *run, const tfl_tensor *outputs, FILE *f);

/**
 * The same CSV saved to path through tfl_file_write_atomic: the file is the whole CSV or, on
 * any error, as it was. Errors: INVALID_ARGUMENT (NULL or empty path, and those of
 * tfl_run_write_predictions), RESOURCE_EXHAUSTED, FAILED_PRECONDITION (the file cannot be
 * written, naming it and the system's reason), MISUSE (closed run).
 */
TFL_API tfl_status tfl_run_save_predictions(tfl_run *run, const tfl_tensor *outputs,
                                            const char *path);

/**
 * Text from the restored model of a run whose data.train is `format: text` (tfl_run_restore
 * first): the prompt's bytes become token ids through the training text's vocabulary
 * (tfl_dataset_text_vocab: bytes, or the training corpus's characters), opts->tokens ids are
 * generated (tfl_model_generate; opts->context_length 0 takes data.train.context_length),
 * and their bytes go to text[0..*n_text), NUL-terminated (a byte vocabulary may also give 0
 * bytes inside). The same seed gives the same text on every run. Nothing is written to the
 * run directory.
 * @param prompt  a NUL-terminated string of 1 to context_length bytes.
 * @param text    room for opts->tokens + 1 bytes.
 * @param n_text  receives the bytes generated (also on error: those made before it).
 * Errors: INVALID_ARGUMENT (NULL, a byte of the prompt that is not in the vocabulary, naming
 * it and its position; tfl_model_generate's: an empty prompt, one longer than the context,
 * temperature < 0 or NaN, top_k < 0), FAILED_PRECONDITION (data.train is not `format: text`;
 * the model generated an id outside the vocabulary, possible when it has more outputs than
 * the vocabulary has tokens), the model's errors.
 */
TFL_API tfl_status tfl_run_generate(tfl_run *run, const char *prompt, const tfl_generate_opts *opts,
                                    char *text, int64_t *n_text);

/**
 * The context length of a run whose data.train is `format: text` (data.train.context_length:
 * the longest prompt tfl_run_generate takes), into *context_length (optional). A program
 * asks it before restoring, so that a config that cannot generate is named first. Errors:
 * INVALID_ARGUMENT (NULL run), FAILED_PRECONDITION (another format: "generation needs a text
 * model: data.train of <config> is 'format: csv', not 'format: text'"), MISUSE (closed).
 */
TFL_API tfl_status tfl_run_text_context(tfl_run *run, int64_t *context_length);

/** Asks a training run to stop after its current step, saving a checkpoint of it. Safe from a
 * signal handler and from another thread (it sets one sig_atomic_t). */
TFL_API void tfl_run_cancel(tfl_run *run);

/** The run's model (owned by the run), for an application's own use between calls. */
TFL_API tfl_model *tfl_run_model(tfl_run *run);

/** Closes the run: frees its model, optimizer and datasets, gives the context its log sink
 * back. NULL is fine. */
TFL_API void tfl_run_close(tfl_run *run);

/* ---- around runs: what a program shows and ships ------------------------------------------- */

/**
 * What a completed tfl_run_train did, as the lines `tapeflow train` prints at its end (empty
 * for a refused or cancelled result): "trained already: <epochs> epochs (<checkpoint>)" when
 * there was nothing to train; "test_loss L - test_accuracy A" when the test data was
 * measured; "trained <n> epochs, <steps> steps in <s> s; final loss L, accuracy A, val_loss
 * V, val_accuracy W; run directory <dir>" (the figures the run has, and "(non-finite steps
 * skipped)" when some were); "event file: <path> (tensorboard --logdir <dir>)", dir the folder
 * holding the run directory (runs of runs/xor) or, for a bare name, the run directory, and
 * "curves: <path>", when they were written. Each line ends in a newline. Like
 * snprintf: at most size bytes into buf (NULL with size 0: nothing), NUL-terminated when
 * size > 0; returns the length of the whole text (32 KiB always suffice), -1 for NULL.
 */
TFL_API int64_t tfl_run_summary(const tfl_run_result *result, char *buf, size_t size);

/**
 * The newest usable checkpoint of the run directory run_dir (its checkpoints/, as
 * tfl_ckpt_latest finds it: a damaged newer one is skipped with a warning), without opening
 * the run: its path into path[0..size), its step into *step (optional). Errors:
 * INVALID_ARGUMENT (NULL or empty run_dir, NULL path or size 0, a path too long), NOT_FOUND
 * ("no usable checkpoint in '<run_dir>/checkpoints': train first").
 */
TFL_API tfl_status tfl_run_latest_checkpoint(tfl_ctx *ctx, const char *run_dir, char *path,
                                             size_t size, int64_t *step);

#ifdef __cplusplus
}
#endif
#endif /* TAPEFLOW_RUN_H */
