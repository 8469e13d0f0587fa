/*
 * tapeflow/config.h: YAML run configs (configs/README.md documents every key). One file
 * describes one run: data, model, loss, metrics, optimizer, training, checkpoint, logging.
 *
 *     tfl_status st;
 *     const char *sets[] = {"optimizer.learning_rate=3e-4"};
 *     tfl_config *cfg = tfl_config_load(ctx, "configs/xor.yaml", sets, 1, &st);
 *     if (st != TFL_OK) {                      // every problem, sorted by position
 *         for (size_t i = 0; i < tfl_config_diag_count(cfg); i++)
 *             fprintf(stderr, "%s\n", tfl_config_diag_text(cfg, i));
 *     }
 *     tfl_model *m = tfl_config_build_model(cfg);          // layers, shapes checked
 *     tfl_optimizer *opt = tfl_config_build_optimizer(cfg);
 *     tfl_config_compile(cfg, m, opt);                     // loss and metrics
 *     tfl_config_datasets data;
 *     tfl_config_build_datasets(cfg, &data);
 *     tfl_fit_opts fo;
 *     tfl_config_fit_opts(cfg, &data, &fo);
 *     tfl_model_fit(m, data.train, &fo, NULL);
 *
 * Loading never runs anything the file names and is bounded: a file over 1 MiB, nesting
 * deeper than 64, a sequence or mapping of more than 4096 entries, more than 65536 nodes,
 * any tag (`!x`, `!!python/...`), any anchor or alias (so a "billion laughs" file is a
 * plain error), several documents, and bytes that are not UTF-8 are refused.
 * Scalars are typed by tapeflow's schema, not by YAML 1.1: `1e-3`, `3.e-4` and `1_000` are
 * numbers; a boolean is `true` or `false` only; a quoted scalar is a string.
 *
 * Diagnostics are data: each names the file (the config's path as given, or "--set[N]" for
 * the N-th override, 1-based), the 1-based line and column (0 when not located: overrides,
 * a missing file), the dotted path in the config ("model.layers[2].dense.units", layers
 * counted from 0) and a message. They are collected (up to 100), sorted by position, and
 * formatted `file:line:col: path: message` (`--set[2]: path: message` for an override).
 *
 * A config belongs to its context (freed with it if the caller has not).
 */
#ifndef TAPEFLOW_CONFIG_H
#define TAPEFLOW_CONFIG_H

#include <stdio.h>

#include <tapeflow/base.h>
#include <tapeflow/data.h>
#include <tapeflow/model.h>
#include <tapeflow/optim.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tfl_config tfl_config;

/** One problem found in a config; strings are owned by the config. */
typedef struct tfl_config_diag {
    const char *file;    /* the config path as given, or "--set[N]" */
    int line, col;       /* 1-based; 0 when not located */
    const char *path;    /* "optimizer.learning_rate"; "" for the document itself */
    const char *message; /* "unknown key 'unit'; did you mean 'units'?" */
} tfl_config_diag;

/** The bounds of the loader (see the top of this header). */
#define TFL_CONFIG_MAX_BYTES (1u << 20)
#define TFL_CONFIG_MAX_DEPTH 64
#define TFL_CONFIG_MAX_ITEMS 4096
#define TFL_CONFIG_MAX_NODES 65536
#define TFL_CONFIG_MAX_DIAGS 100

/**
 * Loads the YAML file at `path`, applies the overrides ("key.path[1].x=value", merged into
 * the document in order, a new key allowed, the value parsed as YAML) and validates the
 * result once: types, ranges, required keys, unknown keys (with did-you-mean), options the
 * chosen kind does not read, and the model's layer shapes (shape inference from
 * model.input_shape, reported at the offending layer). Relative paths in the config resolve
 * against the config file's directory.
 * @param overrides   n_overrides strings (may be NULL when 0).
 * @param status      optional: TFL_OK for a valid config; INVALID_ARGUMENT when problems were
 *                    found (the ctx keeps "invalid config: N problems; first: ..."), or
 *                    RESOURCE_EXHAUSTED.
 * Returns: the config, also an invalid one (so that its diagnostics can be read; builders
 * refuse it with FAILED_PRECONDITION); NULL only without memory or ctx.
 */
TFL_API tfl_config *tfl_config_load(tfl_ctx *ctx, const char *path, const char *const *overrides,
                                    size_t n_overrides, tfl_status *status);

/**
 * As tfl_config_load, from `len` bytes of YAML in memory. `name` is the file name the
 * diagnostics show (NULL: "<config>"); `base_dir` resolves relative paths (NULL: ".").
 */
TFL_API tfl_config *tfl_config_parse(tfl_ctx *ctx, const char *text, size_t len, const char *name,
                                     const char *base_dir, const char *const *overrides,
                                     size_t n_overrides, tfl_status *status);

/** Frees the config (and its diagnostics). NULL: no-op. */
TFL_API void tfl_config_free(tfl_config *cfg);

/** Whether the config has no problem. */
TFL_API bool tfl_config_valid(const tfl_config *cfg);
/** The diagnostics kept (at most TFL_CONFIG_MAX_DIAGS), sorted by position. */
TFL_API size_t tfl_config_diag_count(const tfl_config *cfg);
/** How many problems were found, also those beyond the cap. */
TFL_API size_t tfl_config_diag_total(const tfl_config *cfg);
/** The i-th diagnostic, borrowed; NULL out of range. */
TFL_API const tfl_config_diag *tfl_config_diag_at(const tfl_config *cfg, size_t i);
/** The i-th diagnostic as one line "file:line:col: path: message", borrowed; NULL out of range. */
TFL_API const char *tfl_config_diag_text(const tfl_config *cfg, size_t i);
/** Every diagnostic line, each ending in '\n' (and "... and N more" past the cap); borrowed. */
TFL_API const char *tfl_config_diagnostics(const tfl_config *cfg);

/**
 * The resolved config as YAML: every key explicit (defaults written out, the optimizer's
 * defaults resolved for its kind and formula, paths absolute), which loads back to the same
 * resolved config. Borrowed, valid until the next call or the free; NULL for an invalid
 * config (FAILED_PRECONDITION) or RESOURCE_EXHAUSTED.
 */
TFL_API const char *tfl_config_format(tfl_config *cfg);

/** The path of the config file as given ("<config>" from memory); the run's name (the file
 * name without directory and .yaml/.yml extension). Borrowed. */
TFL_API const char *tfl_config_path(const tfl_config *cfg);
TFL_API const char *tfl_config_name(const tfl_config *cfg);

/* ---- builders (each refuses an invalid config: FAILED_PRECONDITION) ---------------------- */

/**
 * Makes the model: its layers in order, built for model.input_shape (batch -1). A layer
 * that cannot take its input is an INVALID_ARGUMENT naming the file, line and layer.
 * Returns: the model (owned by the caller, or freed with the ctx), or NULL.
 */
TFL_API tfl_model *tfl_config_build_model(tfl_config *cfg);

/** Makes the optimizer (kind, formula, options, schedule, clipping). NULL on error. */
TFL_API tfl_optimizer *tfl_config_build_optimizer(tfl_config *cfg);

/** Compiles `model` with `optimizer` and the config's loss and metrics. */
TFL_API tfl_status tfl_config_compile(tfl_config *cfg, tfl_model *model, tfl_optimizer *optimizer);

/** The datasets of the data section; NULL where the config has none. */
typedef struct tfl_config_datasets {
    tfl_dataset *train, *validation, *test;
} tfl_config_datasets;

/**
 * Loads the data section's sources (validation: the source given, or the last
 * validation_split of the training examples), sets their normalisation (standardize: the
 * training set's moments for all) and batching, and checks each one's example shape against
 * model.input_shape. A file that cannot be read or is malformed is an error naming the file
 * and the config line (NOT_FOUND, DATA_LOSS, ... as the loaders say). On error nothing is
 * returned (every dataset made is freed).
 */
TFL_API tfl_status tfl_config_build_datasets(tfl_config *cfg, tfl_config_datasets *out);

/**
 * Examples to predict, from a file read as the training source is (an IDX images file, or a
 * CSV file with the training source's header and delimiter: feature columns only, or laid
 * out as the training file, its class label column included), scaled and (standardize)
 * normalised with the training examples' moments, as in training; their shape is checked
 * against model.input_shape. `data` is what tfl_config_build_datasets gave.
 * Returns: a dataset, with labels when the CSV had the training data's label column (they
 * are never inputs: tfl_dataset_has_labels says so, and they can score the predictions), or
 * NULL (the loaders' errors: NOT_FOUND, DATA_LOSS, ...; INVALID_ARGUMENT for a shape that
 * does not fit, naming both).
 */
TFL_API tfl_dataset *tfl_config_load_examples(tfl_config *cfg, const tfl_config_datasets *data,
                                              const char *path);

/** Frees the datasets of `data` and zeroes it. */
TFL_API void tfl_config_datasets_free(tfl_config_datasets *data);

/**
 * Fills fit options from the training and data sections (epochs, batch size, shuffle and its
 * seed, validation = data->validation, step_graphs, sync_every: training.sync_every, or when
 * it is null the greatest common divisor of logging.log_interval, logging.every_steps and
 * checkpoint.every_steps that are not 0, INT64_MAX (the epochs' ends) when all are 0);
 * progress and callbacks are left NULL for the caller.
 */
TFL_API tfl_status tfl_config_fit_opts(const tfl_config *cfg, const tfl_config_datasets *data,
                                       tfl_fit_opts *out);

/** Applies training.seed (when not 0), training.threads (when not 0),
 * training.deterministic (tfl_ctx_set_deterministic) and training.device to the context: a
 * device other than auto opens a device scope (tfl_device_scope_push; "GPU" is GPU:0) for
 * everything made afterwards, once per config, and stays open (soft placement: a GPU the
 * machine lacks falls back to the CPU). Errors: FAILED_PRECONDITION (an invalid config),
 * tfl_ctx_set_seed's, tfl_device_scope_push's. */
TFL_API tfl_status tfl_config_apply_context(tfl_config *cfg);

/* ---- reading resolved values ---------------------------------------------------------------- */

/**
 * A resolved scalar by its dotted path ("training.epochs", "optimizer.schedule.kind",
 * "model.layers[1].dense.units"). Numbers and enum names come back as the YAML text
 * tfl_config_format writes ("0.001", "adam"); a null value as "null". Returns the length
 * written (as snprintf), or -1 when the path names no scalar (no error kept).
 */
TFL_API int tfl_config_get(const tfl_config *cfg, const char *path, char *buf, size_t size);

/* ---- comparing with the config a run was started with ---------------------------------------- */

/** One key whose value differs (tfl_config_diff). */
typedef struct tfl_config_change {
    const char *path; /* "training.epochs", "model.layers[1].dense.units" */
    const char *was;  /* the value's YAML text before; NULL: the key was not there */
    const char *now;  /* the value now; NULL: the key is gone */
    bool resumable;   /* tfl_config_key_resumable(path) */
} tfl_config_change;

/**
 * The keys whose values differ between `was` (len bytes of the resolved YAML a run was
 * started with, as tfl_config_format wrote it: the "tapeflow.config" metadata of a training
 * checkpoint, or a run directory's config.yaml) and the valid config `cfg`. Both sides are
 * read as YAML trees and compared leaf by leaf, without validating `was` again (a run whose
 * data files have moved can still be compared). Lists of scalars ([3, 3]) are one value;
 * list items are "[i]" (a layer added shows its keys with was == NULL). Comment lines, such
 * as the version line, are not compared.
 * Returns the number of changes (0: the same config), with *changes pointing at them in
 * cfg's key order (keys gone from cfg last), owned by cfg until it is freed; or -1:
 * INVALID_ARGUMENT (was is not YAML, or over TFL_CONFIG_MAX_BYTES; the message names the
 * line), FAILED_PRECONDITION (cfg is invalid), RESOURCE_EXHAUSTED.
 *
 *     const tfl_config_change *ch;
 *     int64_t n = tfl_config_diff(cfg, stored, strlen(stored), &ch);
 *     for (int64_t i = 0; i < n; i++)
 *         printf("%s: %s -> %s%s\n", ch[i].path, ch[i].was ? ch[i].was : "(absent)",
 *                ch[i].now ? ch[i].now : "(absent)", ch[i].resumable ? "" : " (not resumable)");
 */
TFL_API int64_t tfl_config_diff(tfl_config *cfg, const char *was, size_t len,
                                const tfl_config_change **changes);

/**
 * Whether a run may resume from a checkpoint with this key changed and still continue the
 * same training: training.epochs, training.sync_every (when the host reads the figures),
 * training.step_graphs (the same results) and
 * the logging.* and checkpoint.* keys. Every other key
 * changes what is trained or how (the model, data, loss, optimizer, batch size, seed, ...),
 * and `tapeflow train` resumes with such a change only when given --allow-config-change.
 */
TFL_API bool tfl_config_key_resumable(const char *path);

/** The schema as Markdown: every key with its type, default, range and meaning (the source
 * of configs/README.md's reference). Borrowed; NULL on RESOURCE_EXHAUSTED. */
TFL_API const char *tfl_config_schema_markdown(tfl_config *cfg);

#ifdef __cplusplus
}
#endif
#endif /* TAPEFLOW_CONFIG_H */
