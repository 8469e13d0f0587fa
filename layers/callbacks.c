/*
 * layers/callbacks.c: the built-in callbacks of tfl_model_fit: early stopping (with the best
 * weights kept and restored), a CSV log of the epochs, and the checkpoint hook.
 */
#include "layers_internal.h"

#include <errno.h>
#include <math.h>

/* The monitored figure of an epoch, and whether larger is better; false for an unknown name. */
static bool monitored(const char *monitor, const tfl_epoch_logs *lg, double *value, bool *larger)
{
    static const struct {
        const char *name;
        size_t offset;
        bool larger;
    } figures[] = {
        {"loss", offsetof(tfl_epoch_logs, loss), false},
        {"accuracy", offsetof(tfl_epoch_logs, accuracy), true},
        {"val_loss", offsetof(tfl_epoch_logs, val_loss), false},
        {"val_accuracy", offsetof(tfl_epoch_logs, val_accuracy), true},
    };
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++)
        if (!strcmp(monitor, figures[i].name)) {
            if (lg) *value = *(const double *)((const char *)lg + figures[i].offset);
            *larger = figures[i].larger;
            return true;
        }
    return false;
}

/* Checks a monitor name at train begin (INVALID_ARGUMENT naming it and the choices). */
static tfl_status check_monitor(tfl_model *m, const char *who, const char *monitor, double *best)
{
    double v;
    bool larger;
    TFL_CHECK_RET(m->ctx, monitored(monitor, NULL, &v, &larger), TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "%s: unknown monitor '%.64s' (loss, accuracy, val_loss, "
                  "val_accuracy)", who, monitor);
    *best = larger ? -INFINITY : INFINITY;
    return TFL_OK;
}

/* Whether lg improves on *best by more than min_delta (updates *best); a NaN figure (not
 * measured) is an error naming the monitor. */
static tfl_status improved(tfl_model *m, const char *who, const char *monitor, double min_delta,
                           const tfl_epoch_logs *lg, double *best, bool *better)
{
    double v = NAN;
    bool larger = false;
    monitored(monitor, lg, &v, &larger);
    TFL_CHECK_RET(m->ctx, !isnan(v), TFL_FAILED_PRECONDITION, TFL_FAILED_PRECONDITION,
                  "%s: the monitored '%s' was not measured (no validation data or metric?)", who,
                  monitor);
    *better = larger ? v - min_delta > *best : v + min_delta < *best;
    if (*better) *best = v;
    return TFL_OK;
}

/* ---- early stopping ---------------------------------------------------------------------------- */

/* the best weights: a NULL-terminated array of kept snapshots */
static void drop_saved(tfl_model *m, tfl_early_stopping *es)
{
    tfl_tensor **saved = es->saved;
    for (int i = 0; saved && saved[i]; i++) tfl_tensor_release(saved[i]);
    tfl__host_free(m->ctx, saved);
    es->saved = NULL;
}

static tfl_status es_begin(tfl_model *m, void *user)
{
    tfl_early_stopping *es = user;
    TFL_CHECK_RET(m->ctx, es, TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT,
                  "early stopping: the callback's settings are NULL");
    const char *mon = es->monitor ? es->monitor : "val_loss";
    TFL_CHECK_RET(m->ctx, es->patience >= 0 && es->min_delta >= 0, TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "early stopping: patience and min_delta must be >= 0, got "
                  "%d and %g", es->patience, es->min_delta);
    es->stopped_epoch = -1;
    es->saved = NULL;
    double best;
    tfl_status st = check_monitor(m, "early stopping", mon, &best);
    if (st != TFL_OK || es->resume) return st;
    es->wait = 0;
    es->best_epoch = -1;
    es->best = best;
    return TFL_OK;
}

static tfl_status es_epoch(tfl_model *m, const tfl_epoch_logs *lg, void *user, bool *stop)
{
    tfl_early_stopping *es = user;
    bool better;
    tfl_status st = improved(m, "early stopping", es->monitor ? es->monitor : "val_loss",
                             es->min_delta, lg, &es->best, &better);
    if (st != TFL_OK) return st;
    if (better) {
        es->wait = 0;
        es->best_epoch = lg->epoch;
        if (es->restore_best_weights) { /* snapshots: copy-on-write, so cheap until updated */
            int n = tfl_model_variables(m, TFL_VARS_ALL, NULL, 0);
            tfl_tensor **vars = tfl__calloc(m->ctx, sizeof(*vars) * (size_t)(n + 1));
            tfl_tensor **copy = tfl__calloc(m->ctx, sizeof(*copy) * (size_t)(n + 1));
            if (!vars || !copy) {
                tfl__host_free(m->ctx, vars);
                tfl__host_free(m->ctx, copy);
                return tfl_ctx_status(m->ctx);
            }
            tfl_model_variables(m, TFL_VARS_ALL, vars, n);
            bool pushed = (st = tfl_frame_push(m->ctx)) == TFL_OK; /* reads: frame-owned */
            for (int i = 0; i < n && st == TFL_OK; i++) {
                copy[i] = tfl_keep(tfl_variable_read(vars[i]));
                if (!copy[i]) st = tfl_ctx_status(m->ctx);
            }
            if (pushed) tfl_frame_pop(m->ctx);
            tfl__host_free(m->ctx, vars);
            drop_saved(m, es);
            es->saved = copy;
            return st;
        }
    } else if (++es->wait >= es->patience) { /* Keras: patience 2 stops 2 epochs after the best */
        es->stopped_epoch = lg->epoch;
        *stop = true;
    }
    return TFL_OK;
}

static tfl_status es_end(tfl_model *m, const tfl_epoch_logs *last, void *user)
{
    (void)last;
    tfl_early_stopping *es = user;
    tfl_status st = TFL_OK;
    tfl_tensor **saved = es->saved;
    if (saved) { /* Keras 3 restores the best epoch's weights at the end, stopped or not */
        int n = tfl_model_variables(m, TFL_VARS_ALL, NULL, 0);
        tfl_tensor **vars = tfl__calloc(m->ctx, sizeof(*vars) * (size_t)(n + 1));
        if (!vars) st = tfl_ctx_status(m->ctx);
        else tfl_model_variables(m, TFL_VARS_ALL, vars, n);
        for (int i = 0; vars && i < n && saved[i] && st == TFL_OK; i++)
            st = tfl_variable_assign(vars[i], saved[i]);
        tfl__host_free(m->ctx, vars);
    }
    drop_saved(m, es);
    return st;
}

tfl_callback tfl_early_stopping_callback(tfl_early_stopping *es)
{
    return (tfl_callback){.on_train_begin = es_begin, .on_epoch_end = es_epoch,
                          .on_train_end = es_end, .user = es};
}

/* ---- CSV log ------------------------------------------------------------------------------------ */

static void csv_field(FILE *f, double v)
{
    if (isnan(v)) fputs(",", f);
    else fprintf(f, ",%.9g", v);
}

static tfl_status csv_begin(tfl_model *m, void *user)
{
    tfl_csv_logger *log = user;
    TFL_CHECK_RET(m->ctx, log && log->path, TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT,
                  "CSV logger: the %s is NULL", log ? "path" : "logger");
    log->file = NULL;
    bool had = false;
    if (log->append) {
        FILE *probe = fopen(log->path, "r");
        if (probe) {
            had = fgetc(probe) != EOF;
            fclose(probe);
        }
    }
    log->file = fopen(log->path, log->append ? "a" : "w");
    TFL_CHECK_RET(m->ctx, log->file, TFL_FAILED_PRECONDITION, TFL_FAILED_PRECONDITION,
                  "CSV logger: cannot open '%s' for writing: %s", log->path, strerror(errno));
    if (!had) fputs("epoch,loss,accuracy,val_loss,val_accuracy,seconds\n", log->file);
    return TFL_OK;
}

static tfl_status csv_epoch(tfl_model *m, const tfl_epoch_logs *lg, void *user, bool *stop)
{
    (void)stop;
    tfl_csv_logger *log = user;
    fprintf(log->file, "%d", lg->epoch);
    csv_field(log->file, lg->loss);
    csv_field(log->file, lg->accuracy);
    csv_field(log->file, lg->val_loss);
    csv_field(log->file, lg->val_accuracy);
    csv_field(log->file, lg->seconds);
    fputc('\n', log->file);
    TFL_CHECK_RET(m->ctx, fflush(log->file) == 0 && !ferror(log->file), TFL_FAILED_PRECONDITION,
                  TFL_FAILED_PRECONDITION, "CSV logger: writing '%s' failed: %s", log->path,
                  strerror(errno));
    return TFL_OK;
}

static tfl_status csv_end(tfl_model *m, const tfl_epoch_logs *last, void *user)
{
    (void)last;
    tfl_csv_logger *log = user;
    if (!log->file) return TFL_OK;
    int rc = fclose(log->file);
    log->file = NULL;
    TFL_CHECK_RET(m->ctx, rc == 0, TFL_FAILED_PRECONDITION, TFL_FAILED_PRECONDITION,
                  "CSV logger: closing '%s' failed: %s", log->path, strerror(errno));
    return TFL_OK;
}

tfl_callback tfl_csv_logger_callback(tfl_csv_logger *log)
{
    return (tfl_callback){.on_train_begin = csv_begin, .on_epoch_end = csv_epoch,
                          .on_train_end = csv_end, .user = log};
}

/* ---- checkpoint hook ---------------------------------------------------------------------------- */

static tfl_status ck_begin(tfl_model *m, void *user)
{
    tfl_checkpoint_hook *h = user;
    TFL_CHECK_RET(m->ctx, h && h->path_template && h->save && h->every >= 0, TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "checkpoint hook: needs a path_template, a save function "
                  "and every >= 0");
    h->saved = 0;
    return check_monitor(m, "checkpoint hook", h->monitor ? h->monitor : "val_loss", &h->best);
}

static tfl_status ck_epoch(tfl_model *m, const tfl_epoch_logs *lg, void *user, bool *stop)
{
    (void)stop;
    tfl_checkpoint_hook *h = user;
    int every = h->every ? h->every : 1;
    if ((lg->epoch + 1) % every) return TFL_OK;
    if (h->save_best_only) {
        bool better;
        tfl_status st = improved(m, "checkpoint hook", h->monitor ? h->monitor : "val_loss", 0, lg,
                                 &h->best, &better);
        if (st != TFL_OK || !better) return st;
    }
    char path[4096];
    size_t n = 0;
    for (const char *p = h->path_template; *p && n < sizeof path - 1;) {
        if (!strncmp(p, "{epoch}", 7)) {
            n += (size_t)snprintf(path + n, sizeof path - n, "%d", lg->epoch + 1);
            p += 7;
        } else {
            path[n++] = *p++;
        }
    }
    TFL_CHECK_RET(m->ctx, n < sizeof path - 1, TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT,
                  "checkpoint hook: the path is longer than %zu bytes", sizeof path - 2);
    path[n] = 0;
    tfl_status st = h->save(m, path, h->user);
    if (st == TFL_OK) h->saved++;
    return st;
}

tfl_callback tfl_checkpoint_callback(tfl_checkpoint_hook *hook)
{
    return (tfl_callback){.on_train_begin = ck_begin, .on_epoch_end = ck_epoch, .user = hook};
}

/* ---- the non-finite guard -------------------------------------------------------------------- */

static tfl_status nf_grads(tfl_model *m, int n, tfl_tensor *const *vars, tfl_tensor **grads,
                           const tfl_step_logs *logs, void *user, bool *skip)
{
    tfl_nonfinite_guard *g = user;
    /* the guard reads the gradients' norm every step, a synchronisation that the step's
     * loss adds only a word to: an unread loss (sync_every) is read */
    tfl_step_logs read;
    tfl_status rs = tfl_step_logs_read(m, logs, &read);
    if (rs != TFL_OK) return rs;
    const tfl_step_logs *lg = &read;
    TFL_CHECK_RET(m->ctx, g->mode == TFL_NONFINITE_HALT || g->mode == TFL_NONFINITE_SKIP,
                  TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT,
                  "non-finite guard: mode %d is neither TFL_NONFINITE_HALT (0) nor "
                  "TFL_NONFINITE_SKIP (1)", (int)g->mode);
    int bad = -1;
    double norm = 0;
    tfl_status st = tfl_global_norm(m->ctx, n, (const tfl_tensor *const *)grads, &norm, &bad);
    if (st != TFL_OK) return st;
    /* under loss scaling the gradients are the scaled loss's, and one that is not finite is
     * the scaler's to handle (the optimizer skips the step and lowers the scale) */
    const tfl_optimizer_opts *oo = tfl_optimizer_options(m->optimizer);
    if (oo && oo->loss_scale > 0) {
        norm /= tfl_optimizer_loss_scale(m->optimizer);
        bad = -1;
    }
    g->last_norm = norm;
    bool loss_ok = isfinite(lg->loss);
    /* data parallelism: every replica decides on what any replica saw */
    const tfl_replicas *rep = g->replicas;
    double seen[3] = {!loss_ok, bad >= 0, !loss_ok && rep ? rep->index : 0};
    if (rep && rep->count > 1) {
        TFL_CHECK_RET(m->ctx, rep->sum, TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT,
                      "non-finite guard: replicas->sum is NULL");
        st = rep->sum(seen, 3, rep->user);
        if (st != TFL_OK) return st;
    }
    if (seen[0] == 0 && seen[1] == 0) return TFL_OK;
    if (g->mode == TFL_NONFINITE_SKIP) {
        *skip = true;
        g->skipped++;
        return TFL_OK;
    }
    if (seen[0] > 0 && rep && rep->count > 1) {
        char who[96];
        if (seen[0] == 1)
            snprintf(who, sizeof who, "on replica %d of %d", (int)seen[2], rep->count);
        else
            snprintf(who, sizeof who, "on %d of %d replicas", (int)seen[0], rep->count);
        return tfl__set_error(m->ctx, TFL_INVALID_ARGUMENT,
                              "%s: the loss is %s %s at step %lld (epoch %d, batch %lld); "
                              "training halted before the step's update on every replica "
                              "(training.on_nonfinite: halt)",
                              m->name,
                              loss_ok            ? "not finite"
                              : isnan(lg->loss)  ? "NaN"
                              : lg->loss > 0     ? "inf"
                                                 : "-inf",
                              who, (long long)lg->step, lg->epoch + 1, (long long)lg->batch + 1);
    }
    if (bad < 0 && seen[1] > 0) /* a replica's own gradients (no data-parallel callback) */
        return tfl__set_error(m->ctx, TFL_INVALID_ARGUMENT,
                              "%s: a gradient is not finite on %d of %d replicas at step %lld "
                              "(epoch %d, batch %lld); training halted before the step's update "
                              "(training.on_nonfinite: halt)",
                              m->name, (int)seen[1], rep->count, (long long)lg->step,
                              lg->epoch + 1, (long long)lg->batch + 1);
    if (!loss_ok)
        return tfl__set_error(m->ctx, TFL_INVALID_ARGUMENT,
                              "%s: the loss is %s at step %lld (epoch %d, batch %lld); training "
                              "halted before the step's update (training.on_nonfinite: halt)",
                              m->name, isnan(lg->loss) ? "NaN" : lg->loss > 0 ? "inf" : "-inf",
                              (long long)lg->step, lg->epoch + 1, (long long)lg->batch + 1);
    return tfl__set_error(m->ctx, TFL_INVALID_ARGUMENT,
                          "%s: a gradient is not finite at step %lld (epoch %d, batch %lld), "
                          "first that of variable '%s:0' (loss %g); training halted before the "
                          "step's update (training.on_nonfinite: halt)",
                          m->name, (long long)lg->step, lg->epoch + 1, (long long)lg->batch + 1,
                          tfl_variable_name(vars[bad]), lg->loss);
}

tfl_callback tfl_nonfinite_guard_callback(tfl_nonfinite_guard *guard)
{
    return (tfl_callback){.on_gradients = nf_grads, .user = guard};
}
