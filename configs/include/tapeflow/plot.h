/*
 * tapeflow/plot.h: training curves as SVG, from the runs' metrics.csv or event files (what
 * `tapeflow plot` and `tapeflow train`'s curves.svg are made of).
 *
 *     tfl_curves *c = tfl_curves_new(ctx);
 *     tfl_curves_load_run(c, "runs/mlp", "loss", NULL);     // train and validation curves
 *     tfl_curves_load_run(c, "runs/mlp-wide", "loss", NULL);
 *     tfl_curves_write_svg(c, "loss.svg", &(tfl_plot_opts){.log_y = true});
 *     tfl_curves_free(c);
 *
 * A run is a directory holding metrics.csv (the CSV logger's columns: epoch, loss, accuracy,
 * val_loss, val_accuracy, seconds), or event files (tfl_tensorboard_callback's train/ and
 * validation/ subdirectories, or events in the directory itself), or one such file; a
 * directory with both is read from metrics.csv unless the metric is not one of its columns
 * (step/learning_rate, grad_norm, samples_per_second: the event files of train/). The
 * metric "loss" gives the curves of the column "loss" (training) and "val_loss"
 * (validation), or of the tags "epoch/loss" in train/ and validation/ (else the tag as it is,
 * then "step/<metric>"). A run resumed over itself is drawn once: CSV rows whose epoch goes
 * back replace the rows from that epoch on, and an event file's later SessionLog{START} at
 * step s drops the earlier points at steps >= s, as TensorBoard does; a point at or before
 * the last one of its tag replaces the points from its step on.
 *
 * The picture: axes with "nice" ticks (1, 2, 5 × 10^k; decades on a log axis), a grid,
 * labelled axes, a title, one colour per run (training solid, validation dashed, markers
 * when there are few points), a legend. Fonts are generic sans-serif.
 */
#ifndef TAPEFLOW_PLOT_H
#define TAPEFLOW_PLOT_H

#include <tapeflow/base.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tfl_curves tfl_curves;

/** Options of the picture; all-zero means defaults. */
typedef struct tfl_plot_opts {
    int width, height;         /* pixels; 0: 800 x 500 (each at least 200 x 150) */
    bool log_y;                /* a log-scale y axis (points <= 0 are left out) */
    const char *title;         /* NULL: the metric of the first loaded run */
    const char *x_label;       /* NULL: "epoch" or "step", from the data */
    const char *y_label;       /* NULL: the metric */
    bool log_y_auto;           /* log_y when every point is > 0 and the largest is more
                                  than 100 times the smallest (a loss from 2 to 0.004) */
} tfl_plot_opts;

/** An empty set of curves. NULL with RESOURCE_EXHAUSTED kept. */
TFL_API tfl_curves *tfl_curves_new(tfl_ctx *ctx);
/** Frees (NULL: no-op). Curves still alive at tfl_ctx_free are freed with the ctx. */
TFL_API void tfl_curves_free(tfl_curves *c);

/**
 * Adds one curve: n points (x[i], y[i]) in order of x (points with a non-finite coordinate
 * are left out). `run` names its colour (curves of the same run share one), `label` is the
 * legend's text, validation draws it dashed. Errors: INVALID_ARGUMENT (NULL names, n < 0,
 * NULL arrays with n > 0), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_status tfl_curves_add(tfl_curves *c, const char *run, const char *label,
                                  bool validation, int64_t n, const double *x, const double *y);

/**
 * Adds the training and validation curves of `metric` (NULL: "loss") of the run at `path`
 * (see above); `name` labels them (NULL: the path's last component). Returns the number of
 * curves added through *added (may be NULL).
 * Errors: NOT_FOUND (no metrics.csv or event file at path; a metric the run does not have,
 * naming the ones it has), DATA_LOSS (a damaged event file, a CSV line that is not
 * numbers), INVALID_ARGUMENT.
 */
TFL_API tfl_status tfl_curves_load_run(tfl_curves *c, const char *path, const char *metric,
                                       const char *name, int *added);

/** Number of curves. */
TFL_API int tfl_curves_count(const tfl_curves *c);

/**
 * The SVG document (UTF-8, owned by c, valid until the next call on c) and its length.
 * Errors: FAILED_PRECONDITION (no curve with a point, or none > 0 with log_y),
 * INVALID_ARGUMENT (bad sizes), RESOURCE_EXHAUSTED.
 */
TFL_API const char *tfl_curves_svg(tfl_curves *c, const tfl_plot_opts *opts, size_t *len);
/** tfl_curves_svg written to `path` (atomically: a temporary file renamed). */
TFL_API tfl_status tfl_curves_write_svg(tfl_curves *c, const char *path,
                                        const tfl_plot_opts *opts);

/** A run to plot: a run directory, a metrics.csv or an event file (as tfl_curves_load_run);
 * `name` labels its curves (NULL: the path's last component). */
typedef struct tfl_plot_run {
    const char *path, *name;
} tfl_plot_run;

/**
 * The training and validation curves of every run for each metric, a panel per metric (two
 * panels a row when there are several; opts' size is a panel's, 0: 800 x 500 alone, 640 x 420
 * in panels), as one SVG document written atomically to `path`, or (path NULL) to `stream`.
 * A run without values of a metric is logged at WARNING; *n_curves (optional) counts the
 * curves drawn. Errors: tfl_curves_load_run's (NOT_FOUND: a missing run, a metric a run does
 * not have, naming the ones it has), NOT_FOUND when no run has values of a metric ("nothing
 * was written"), FAILED_PRECONDITION (the file or stream cannot be written), INVALID_ARGUMENT.
 */
TFL_API tfl_status tfl_plot_runs(tfl_ctx *ctx, const tfl_plot_run *runs, int n_runs,
                                 const char *const *metrics, int n_metrics,
                                 const tfl_plot_opts *opts, const char *path, FILE *stream,
                                 int *n_curves);

#ifdef __cplusplus
}
#endif

#endif /* TAPEFLOW_PLOT_H */
