/*
 * configs/run_tools.c: what a program around runs calls besides training (tapeflow/run.h):
 * the summary of a training's result, the newest checkpoint of a run directory, predictions
 * saved to a file through the shared atomic write.
 */
#include "run_internal.h"

#include <tapeflow/checkpoint.h>
#include <tapeflow/files.h>

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* snprintf at buf + *at (nothing past size; *at counts what the whole text needs). */
static void add(char *buf, size_t size, size_t *at, const char *fmt, ...) TFL_PRINTF(4, 5);
static void add(char *buf, size_t size, size_t *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t off = *at < size ? *at : size;
    int n = vsnprintf(buf ? buf + off : NULL, buf ? size - off : 0, fmt, ap);
    va_end(ap);
    if (n > 0) *at += (size_t)n;
}

/* TensorBoard's --logdir for a run: the folder that holds the run directory (runs/ of
 * runs/xor), so that runs side by side compare; the run directory itself for a bare name. */
static void logdir_of(const char *dir, char *out, size_t size)
{
    const char *s = strrchr(dir, '/');
    if (!s || s == dir) snprintf(out, size, "%s", dir);
    else snprintf(out, size, "%.*s", (int)(s - dir), dir);
}

int64_t tfl_run_summary(const tfl_run_result *res, char *buf, size_t size)
{
    if (!buf) size = 0;
    if (size) buf[0] = 0;
    size_t at = 0;
    if (!res) return -1;
    if (res->refused || res->cancelled) return 0;
    if (res->trained_already)
        add(buf, size, &at, "trained already: %d epochs (%s)\n", res->epochs, res->checkpoint);
    if (!isnan(res->test_loss)) {
        add(buf, size, &at, "test_loss %.4f", res->test_loss);
        if (!isnan(res->test_accuracy))
            add(buf, size, &at, " - test_accuracy %.4f", res->test_accuracy);
        add(buf, size, &at, "\n");
    }
    if (res->epochs > 0 && !res->trained_already) {
        const tfl_epoch_logs *l = &res->last;
        add(buf, size, &at, "trained %d epoch%s, %lld steps in %.1f s; final loss %.4f",
            res->epochs, res->epochs == 1 ? "" : "s", (long long)res->steps, res->seconds,
            l->loss);
        if (!isnan(l->accuracy)) add(buf, size, &at, ", accuracy %.4f", l->accuracy);
        if (!isnan(l->val_loss)) add(buf, size, &at, ", val_loss %.4f", l->val_loss);
        if (!isnan(l->val_accuracy)) add(buf, size, &at, ", val_accuracy %.4f", l->val_accuracy);
        add(buf, size, &at, "%s; run directory %s\n",
            res->skipped_steps ? " (non-finite steps skipped)" : "", res->run_dir);
    }
    if (res->event_file[0]) {
        char parent[sizeof res->run_dir];
        logdir_of(res->run_dir, parent, sizeof parent);
        add(buf, size, &at, "event file: %s (tensorboard --logdir %s)\n", res->event_file,
            parent);
    }
    if (res->curves[0]) add(buf, size, &at, "curves: %s\n", res->curves);
    return (int64_t)at;
}

tfl_status tfl_run_latest_checkpoint(tfl_ctx *ctx, const char *run_dir, char *path, size_t size,
                                     int64_t *step)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, run_dir && *run_dir && path && size, TFL_INVALID_ARGUMENT,
              "tfl_run_latest_checkpoint: %s", !run_dir || !*run_dir ? "run_dir is NULL or empty"
                                                                     : "no room for the path");
    char dir[4200];
    TFL_CHECK(ctx, strlen(run_dir) + sizeof "/checkpoints" <= sizeof dir, TFL_INVALID_ARGUMENT,
              "tfl_run_latest_checkpoint: the run directory '%.64s...' is longer than %zu bytes",
              run_dir, sizeof dir - sizeof "/checkpoints");
    snprintf(dir, sizeof dir, "%s/checkpoints", run_dir);
    tfl_status st = tfl_ckpt_latest(ctx, dir, NULL, path, size, step);
    if (st != TFL_NOT_FOUND) return st;
    tfl_ctx_clear_error(ctx); /* the same words as tfl_run_restore's */
    return tfl__set_error(ctx, TFL_NOT_FOUND, "no usable checkpoint in '%s': train first", dir);
}

tfl_status tfl_run_save_predictions(tfl_run *run, const tfl_tensor *outputs, const char *path)
{
    tfl_config *cfg = NULL;
    tfl_dataset *train = NULL;
    if (!run) return TFL_INVALID_ARGUMENT;
    if (!tfl__run_parts(run, "tfl_run_save_predictions", &cfg, &train)) return TFL_MISUSE;
    TFL_CHECK(cfg->ctx, path && *path, TFL_INVALID_ARGUMENT,
              "tfl_run_save_predictions: path is NULL or empty");
    char *text = NULL; /* the CSV in memory (libc's), then written in one atomic step */
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    TFL_CHECK(cfg->ctx, f, TFL_RESOURCE_EXHAUSTED,
              "tfl_run_save_predictions: no memory for the predictions of '%s'", path);
    tfl_status st = tfl_run_write_predictions(run, outputs, f);
    if (fclose(f) != 0 && st == TFL_OK)
        st = tfl__set_error(cfg->ctx, TFL_RESOURCE_EXHAUSTED,
                            "tfl_run_save_predictions: no memory for the predictions of '%s'",
                            path);
    if (st == TFL_OK) st = tfl_file_write_atomic(cfg->ctx, path, text, len);
    free(text);
    return st;
}
