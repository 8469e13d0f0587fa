/*
 * configs/run.c: a training run (tapeflow/run.h): the run directory, resume and the config-
 * change policy, checkpoints, metrics.csv, run.log, TensorBoard event files, the non-finite
 * guard, putting a directory back after a failed start; evaluation and prediction of the
 * trained model. The config's values are read typed, from the resolved sections.
 */
#include "run_internal.h"

#include <tapeflow/files.h>
#include <tapeflow/plot.h>
#include <tapeflow/run.h>
#include <tapeflow/train_state.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GETV(s, name) tfl__rget((s), (name))
#define SEC(cfg, name) (tfl__rget((cfg)->res, (name))->sec)

struct tfl_run {
    tfl__ctx_obj obj;
    tfl_ctx *ctx;
    tfl_config *cfg;
    tfl_model *model;
    tfl_optimizer *opt;
    tfl_config_datasets data;
    tfl_run_opts o;
    tfl__run_dp dp;       /* opts.comm: several ranks, or one process */
    char dir[4096], cdir[4200], csv[4200];
    volatile sig_atomic_t cancel, save_request;
    char *warned;         /* WARNING lines not yet in run.log (host memory) */
    size_t warned_len;
};

/* ---- events and the log sink ------------------------------------------------------------- */

static void emit(tfl_run *r, tfl_run_event_kind kind, const tfl_step_logs *step,
                 const tfl_epoch_logs *epoch, const char *fmt, ...) TFL_PRINTF(5, 6);
static void emit(tfl_run *r, tfl_run_event_kind kind, const tfl_step_logs *step,
                 const tfl_epoch_logs *epoch, const char *fmt, ...)
{
    if (!r->o.on_event) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->o.on_event(r->o.user, &(tfl_run_event){kind, line, step, epoch});
}

static void run_sink(void *user, tfl_log_level level, const char *message)
{
    tfl_run *r = user;
    if (r->o.log_fn && level <= r->o.log_level) r->o.log_fn(r->o.log_user, level, message);
    if (level != TFL_LOG_WARNING) return;
    size_t add = strlen(message) + 12;
    char *more = realloc(r->warned, r->warned_len + add);
    if (more) {
        r->warned = more;
        r->warned_len += (size_t)snprintf(more + r->warned_len, add, "warning: %s\n", message);
    }
    emit(r, TFL_RUN_EVENT_WARNING, NULL, NULL, "%s", message);
}

/* ---- files ------------------------------------------------------------------------------- */

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap) {
            char *more = realloc(buf, cap *= 2);
            if (!more) free(buf);
            buf = more;
        }
    }
    if (buf) buf[n] = 0;
    fclose(f);
    return buf;
}

/* The resolved config without its first line, a comment naming the file it came from. */
static const char *body(const char *resolved)
{
    const char *nl = resolved[0] == '#' ? strchr(resolved, '\n') : NULL;
    return nl ? nl + 1 : resolved;
}

/* The keys changed since the run began, for run.log. */
typedef struct changes {
    const tfl_config_change *v; /* owned by the config */
    int64_t n;
    char since[4400];           /* the file the earlier config came from */
    bool forced;                /* allow_config_change let changes of the training through */
} changes;

/* Appends a line (the warnings since the last line, the config changes) to run.log. */
static void run_log(tfl_run *r, const changes *ch, const char *fmt, ...) TFL_PRINTF(3, 4);
static void run_log(tfl_run *r, const changes *ch, const char *fmt, ...)
{
    if (!r->dp.writer) return;
    char path[4200], when[32];
    snprintf(path, sizeof path, "%s/run.log", r->dir);
    FILE *f = fopen(path, "a");
    if (!f) {
        tfl__log(r->ctx, TFL_LOG_WARNING, "run: cannot append to '%s': %s", path, strerror(errno));
        return;
    }
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    fprintf(f, "%s ", when);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    for (const char *w = r->warned; w && *w;) {
        const char *nl = strchr(w, '\n');
        int len = nl ? (int)(nl - w) : (int)strlen(w);
        fprintf(f, "  %.*s\n", len, w);
        w += len + (nl != NULL);
    }
    free(r->warned);
    r->warned = NULL;
    r->warned_len = 0;
    if (ch && ch->n > 0)
        fprintf(f, "  config changes since %s%s:\n", ch->since,
                ch->forced ? " (changes of the training allowed)" : "");
    for (int64_t i = 0; ch && i < ch->n; i++)
        fprintf(f, "    %s: %s -> %s\n", ch->v[i].path, ch->v[i].was ? ch->v[i].was : "(absent)",
                ch->v[i].now ? ch->v[i].now : "(absent)");
    if (fclose(f) != 0)
        tfl__log(r->ctx, TFL_LOG_WARNING, "run: cannot write '%s': %s", path, strerror(errno));
}

/* What a run directory held before a run wrote to it: a run that fails before its first
 * step puts it back (a new directory goes again). */
typedef struct before {
    bool existed;
    char *config, *csv; /* the texts (NULL: none) */
    off_t log_size;     /* -1: none */
    char events[2][4200];
} before;

static void before_free(before *b)
{
    free(b->config);
    free(b->csv);
    b->config = b->csv = NULL;
}

static void undo(tfl_run *r, const before *b)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/config.yaml", r->dir);
    if (b->config) tfl_file_write_atomic(r->ctx, p, b->config, strlen(b->config));
    else unlink(p);
    snprintf(p, sizeof p, "%s/run.log", r->dir);
    if (b->log_size < 0) unlink(p);
    else if (truncate(p, b->log_size) != 0 && errno != ENOENT)
        tfl__log(r->ctx, TFL_LOG_WARNING, "run: cannot restore '%s': %s", p, strerror(errno));
    if (b->csv) tfl_file_write_atomic(r->ctx, r->csv, b->csv, strlen(b->csv));
    else unlink(r->csv);
    for (int i = 0; i < 2; i++)
        if (b->events[i][0]) unlink(b->events[i]);
    const char *sub[] = {"train", "validation"};
    for (int i = 0; i < 2; i++) { /* only when empty */
        snprintf(p, sizeof p, "%s/%s", r->dir, sub[i]);
        rmdir(p);
    }
    rmdir(r->cdir);
    if (!b->existed) rmdir(r->dir);
}

/* A resumed run's metrics file keeps its header and the lines of the epochs before `epoch`:
 * the lines written after the checkpoint it resumes from are written again. */
static void trim_csv(tfl_run *r, const char *text, int epoch)
{
    if (!text) return;
    size_t keep = 0;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
        char *end;
        long e = strtol(line, &end, 10);
        if (line != text && (end == line || *end != ',' || e >= epoch)) break;
        keep += len;
        line += len;
    }
    if (text[keep] == 0) return;
    if (tfl_file_write_atomic(r->ctx, r->csv, text, keep) != TFL_OK) {
        tfl__log(r->ctx, TFL_LOG_WARNING, "run: cannot drop the lines past epoch %d of '%s': %s",
                 epoch, r->csv, tfl_ctx_error(r->ctx).message);
        tfl_ctx_clear_error(r->ctx);
    }
}

/* ---- open and close ---------------------------------------------------------------------- */

static void run_free_obj(tfl__ctx_obj *o)
{
    tfl_run_close((tfl_run *)o);
}

static bool run_alive(const tfl_run *r, const char *what)
{
    return tfl__obj_check(r->ctx, &r->obj, TFL__MAGIC_RUN, what);
}

tfl_run *tfl_run_open(tfl_config *cfg, const tfl_run_opts *opts, tfl_status *status)
{
    tfl_status dummy;
    if (!status) status = &dummy;
    *status = TFL_INVALID_ARGUMENT;
    if (!cfg) return NULL;
    tfl_ctx *ctx = cfg->ctx;
    if (!tfl_config_valid(cfg)) {
        *status = tfl__set_error(ctx, TFL_FAILED_PRECONDITION,
                                 "tfl_run_open: the config '%s' is invalid", cfg->file);
        return NULL;
    }
    tfl_run *r = tfl__obj_new(ctx, sizeof *r, TFL__MAGIC_RUN, run_free_obj);
    if (!r) {
        *status = tfl_ctx_status(ctx);
        return NULL;
    }
    r->ctx = ctx;
    r->cfg = cfg;
    if (opts) r->o = *opts;
    char note[160];
    if (tfl__run_dp_open(&r->dp, cfg, r->o.comm, note, sizeof note) != TFL_OK) {
        *status = tfl_ctx_status(ctx);
        tfl_run_close(r);
        return NULL;
    }
    /* the context logs through the run from here on */
    tfl_log_level lvl = r->o.log_fn && r->o.log_level > TFL_LOG_WARNING ? r->o.log_level
                                                                        : TFL_LOG_WARNING;
    tfl_ctx_set_logger(ctx, run_sink, r, lvl);
    /* the directories */
    if (r->o.run_dir) snprintf(r->dir, sizeof r->dir, "%s", r->o.run_dir);
    else snprintf(r->dir, sizeof r->dir, "runs/%s", tfl_config_name(cfg));
    const rval *cd = GETV(SEC(cfg, "checkpoint"), "directory");
    if (cd->set) snprintf(r->cdir, sizeof r->cdir, "%s", cd->s);
    else snprintf(r->cdir, sizeof r->cdir, "%s/checkpoints", r->dir);
    const rval *mc = GETV(SEC(cfg, "logging"), "metrics_csv");
    if (mc->set) snprintf(r->csv, sizeof r->csv, "%s", mc->s);
    else snprintf(r->csv, sizeof r->csv, "%s/metrics.csv", r->dir);
    if (tfl_config_apply_context(cfg) == TFL_OK && (r->model = tfl_config_build_model(cfg)) &&
        (r->opt = tfl_config_build_optimizer(cfg)) &&
        tfl_config_compile(cfg, r->model, r->opt) == TFL_OK &&
        tfl_config_build_datasets(cfg, &r->data) == TFL_OK) {
        *status = TFL_OK;
        if (note[0]) emit(r, TFL_RUN_EVENT_DEVICE, NULL, NULL, "%s", note);
        return r;
    }
    *status = tfl_ctx_status(ctx) != TFL_OK ? tfl_ctx_status(ctx) : TFL_INTERNAL;
    tfl_run_close(r);
    return NULL;
}

void tfl_run_close(tfl_run *r)
{
    if (!r || !run_alive(r, "tfl_run_close")) return;
    tfl_ctx *ctx = r->ctx;
    tfl_config_datasets_free(&r->data);
    tfl_model_free(r->model);
    tfl_optimizer_free(r->opt);
    tfl__run_dp_close(&r->dp);
    free(r->warned);
    tfl_ctx_set_logger(ctx, r->o.log_fn, r->o.log_user, r->o.log_level);
    tfl__obj_retire(ctx, &r->obj);
}

void tfl_run_cancel(tfl_run *r)
{
    if (!r) return;
    r->cancel = 1;
    r->save_request = 1;
}

tfl_model *tfl_run_model(tfl_run *r)
{
    return r && run_alive(r, "tfl_run_model") ? r->model : NULL;
}

/* ---- the config a run was trained with --------------------------------------------------- */

/*
 * Compares the config with the one the run was trained with: the newest checkpoint's
 * "tapeflow.config", else the run directory's config.yaml. Every changed key is an event;
 * FAILED_PRECONDITION (nothing written) when a key other than training.epochs,
 * training.sync_every, training.step_graphs, logging.* and checkpoint.* changed, unless
 * allow_config_change.
 */
static tfl_status compare(tfl_run *r, const char *ckpt, const char *was, const char *yaml_path,
                          changes *out, bool *refused)
{
    tfl_ckpt *ck = ckpt ? tfl_ckpt_open(r->ctx, ckpt) : NULL;
    const char *ref = ck ? tfl_ckpt_metadata(ck, "tapeflow.config") : NULL;
    if (!ck) tfl_ctx_clear_error(r->ctx);
    snprintf(out->since, sizeof out->since, "%s", ref ? ckpt : yaml_path);
    const char *text = body(ref ? ref : was);
    out->n = tfl_config_diff(r->cfg, text, strlen(text), &out->v);
    tfl_ckpt_close(ck);
    if (out->n < 0) {
        out->n = 0;
        return tfl_ctx_status(r->ctx);
    }
    int64_t fixed = 0;
    if (out->n > 0)
        emit(r, TFL_RUN_EVENT_CONFIG_CHANGE, NULL, NULL,
             "the config differs from the one of '%s' in %lld key%s:", out->since,
             (long long)out->n, out->n == 1 ? "" : "s");
    for (int64_t i = 0; i < out->n; i++) {
        const tfl_config_change *c = &out->v[i];
        fixed += !c->resumable;
        emit(r, TFL_RUN_EVENT_CONFIG_CHANGE, NULL, NULL, "  %s: %s -> %s%s", c->path,
             c->was ? c->was : "(absent)", c->now ? c->now : "(absent)",
             c->resumable ? "" : "   [changes the training]");
    }
    if (fixed > 0 && !r->o.allow_config_change) {
        *refused = true;
        return tfl__set_error(
            r->ctx, TFL_FAILED_PRECONDITION,
            "refusing to continue this run: %lld changed key%s change%s what is trained; a run "
            "continues with changes to training.epochs, training.sync_every, "
            "training.step_graphs, logging.* and checkpoint.* only "
            "(tfl_run_opts.allow_config_change lets the others through); nothing was written",
            (long long)fixed, fixed == 1 ? "" : "s", fixed == 1 ? "s" : "");
    }
    out->forced = fixed > 0;
    return TFL_OK;
}

/* ---- callbacks of a training run ----------------------------------------------------------- */

typedef struct watch {
    tfl_run *run;
    int64_t log_interval, steps;
    int stopped_epoch; /* the epoch a cancel stopped, -1 */
} watch;

static tfl_status on_step(tfl_model *m, const tfl_step_logs *lg, void *user, bool *stop)
{
    watch *w = user;
    w->steps = lg->step;
    if (w->log_interval > 0 && lg->step % w->log_interval == 0 && w->run->o.on_event) {
        tfl_step_logs read; /* fit syncs on these steps (sync_every): no extra read */
        tfl_status st = tfl_step_logs_read(m, lg, &read);
        if (st != TFL_OK) return st;
        emit(w->run, TFL_RUN_EVENT_STEP, &read, NULL,
             "epoch %d - batch %lld/%lld - step %lld - loss: %.4f", read.epoch + 1,
             (long long)read.batch + 1, (long long)read.batches, (long long)read.step, read.loss);
    }
    if (w->run->cancel) {
        *stop = true;
        w->stopped_epoch = lg->epoch;
    }
    return TFL_OK;
}

static tfl_status on_epoch(tfl_model *m, const tfl_epoch_logs *lg, void *user, bool *stop)
{
    (void)m;
    (void)stop;
    watch *w = user;
    emit(w->run, TFL_RUN_EVENT_EPOCH, NULL, lg, "epoch %d/%d", lg->epoch + 1, lg->epochs);
    return TFL_OK;
}

/* TensorBoard: the library's callback, whose train begin also notes the event files. */
typedef struct board {
    tfl_tensorboard tb; /* first: the library's seams get this struct as their user */
    tfl_callback inner;
    char *text;         /* the resolved config as Markdown (an indented code block) */
    before *bf;
} board;

static tfl_status board_begin(tfl_model *m, void *user)
{
    board *t = user;
    tfl_status st = t->inner.on_train_begin(m, t->inner.user);
    tfl_summary_writer *w[2] = {t->tb.train, t->tb.validation};
    for (int i = 0; i < 2 && st == TFL_OK; i++) {
        const char *path = w[i] ? tfl_summary_writer_path(w[i]) : NULL;
        if (path) snprintf(t->bf->events[i], sizeof t->bf->events[i], "%s", path);
    }
    return st;
}

static char *markdown_code(const char *text)
{
    size_t lines = 1;
    for (const char *p = text; *p; p++) lines += *p == '\n';
    char *md = malloc(strlen(text) + 4 * lines + 1), *o = md;
    if (!md) return NULL;
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        memcpy(o, "    ", 4);
        memcpy(o + 4, p, n);
        o += 4 + n;
        *o++ = '\n';
        p += n + (e != NULL);
    }
    *o = 0;
    return md;
}

/* Sets t up from the logging section: false when logging.tensorboard is false. */
static bool board_init(tfl_run *r, board *t, int64_t resumed_step, const char *resolved,
                       before *bf)
{
    const rsec *lg = SEC(r->cfg, "logging");
    memset(t, 0, sizeof *t);
    if (!GETV(lg, "tensorboard")->i) return false;
    t->text = resolved ? markdown_code(resolved) : NULL;
    t->bf = bf;
    t->tb = (tfl_tensorboard){.logdir = r->dir,
                              .every_steps = GETV(lg, "every_steps")->i,
                              .histograms = GETV(lg, "histograms")->i != 0,
                              .initial_step = resumed_step, /* SessionLog{START} after it */
                              .text = t->text,
                              .writer = {.flush_secs = GETV(lg, "flush_seconds")->f}};
    t->inner = tfl_tensorboard_callback(&t->tb);
    return true;
}

/* ---- train --------------------------------------------------------------------------------- */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static tfl_status barrier(tfl_run *r)
{
    return tfl__run_dp_barrier(&r->dp);
}

/* Saves the state after fit's last step through the manager. */
static tfl_status save_final(tfl_run *r, tfl_ckpt_manager *mgr, const tfl_train_state *state,
                             const tfl_ckpt_save_opts *so)
{
    char path[4200];
    if (tfl_ckpt_manager_path(mgr, state->step, path, sizeof path) >= (int)sizeof path)
        return tfl__set_error(r->ctx, TFL_INVALID_ARGUMENT, "run: the checkpoint path of step "
                              "%lld is too long", (long long)state->step);
    tfl_status st = tfl_train_state_save(r->model, path, state, so);
    return st == TFL_OK ? tfl_ckpt_manager_commit(mgr, state->step) : st;
}

/* curves.svg in the run directory: loss, and accuracy when measured, per epoch from the
 * metrics file (else the event files); a warning when it cannot be made. */
static void write_curves(tfl_run *r, tfl_run_result *res)
{
    const rval *m = GETV(r->cfg->res, "metrics");
    bool acc = false;
    for (int i = 0; m->set && i < m->n; i++) acc = acc || m->ints[i] == 0;
    const char *metrics[2] = {"loss", "accuracy"};
    char csv_default[4200], path[4200];
    snprintf(csv_default, sizeof csv_default, "%s/metrics.csv", r->dir);
    const char *slash = strrchr(r->dir, '/');
    tfl_plot_run run = {r->dir, slash && slash[1] ? slash + 1 : r->dir};
    if (strcmp(r->csv, csv_default) && access(r->csv, R_OK) == 0) run.path = r->csv;
    snprintf(path, sizeof path, "%s/curves.svg", r->dir);
    bool clean = tfl_ctx_status(r->ctx) == TFL_OK;
    if (tfl_plot_runs(r->ctx, &run, 1, metrics, acc ? 2 : 1,
                      &(tfl_plot_opts){.log_y_auto = true}, path, NULL, NULL) == TFL_OK) {
        snprintf(res->curves, sizeof res->curves, "%s", path);
        return;
    }
    tfl__log(r->ctx, TFL_LOG_WARNING, "no %s (%s); the run is complete", path,
             tfl_ctx_error(r->ctx).message);
    if (clean) tfl_ctx_clear_error(r->ctx);
}

/* Everything train does once the run directory holds this run. */
typedef struct session {
    tfl_run *r;
    tfl_run_result *res;
    tfl_fit_opts fo;
    tfl_history h;
    tfl_train_state state;
    const char *resolved;
    before bf;
    changes ch;
} session;

static tfl_status fit_run(session *s, tfl_ckpt_manager *mgr, board *tb, watch *w)
{
    tfl_run *r = s->r;
    tfl_run_result *res = s->res;
    const rsec *ck = SEC(r->cfg, "checkpoint"), *lgs = SEC(r->cfg, "logging"),
               *tr = SEC(r->cfg, "training");
    tfl_fit_opts *fo = &s->fo;
    const char *meta_keys[] = {"tapeflow.config"}, *meta_values[] = {s->resolved};
    tfl_ckpt_save_opts so = {.n_metadata = 1, .metadata_keys = meta_keys,
                             .metadata_values = meta_values};
    int64_t n = tfl_dataset_size(r->data.train), bs = fo->batch_size ? fo->batch_size : 32;
    int64_t per_epoch = fo->drop_remainder ? n / bs : n / bs + (n % bs != 0);
    int64_t every = GETV(ck, "every")->i, every_steps = GETV(ck, "every_steps")->i;
    tfl_step_checkpoint sc = {.manager = mgr,
                              .every_steps = every_steps > 0                 ? every_steps
                                             : every > 0 && per_epoch > 0 ? every * per_epoch
                                                                          : 0,
                              .request = &r->save_request,
                              .stop_on_request = true,
                              .shuffle_seed = fo->seed,
                              .history = &s->h,
                              .save_opts = &so,
                              .last_step = -1};
    tfl_csv_logger csv = {.path = r->csv, .append = fo->initial_epoch > 0 || fo->initial_batch > 0};
    if (csv.append && r->dp.writer) trim_csv(r, s->bf.csv, fo->initial_epoch);
    tfl_nonfinite_guard guard = {.mode = GETV(tr, "on_nonfinite")->i == 1 ? TFL_NONFINITE_SKIP
                                                                         : TFL_NONFINITE_HALT};
    w->log_interval = GETV(lgs, "log_interval")->i;
    tfl_callback cbs[9] = {tfl_csv_logger_callback(&csv), tfl_nonfinite_guard_callback(&guard),
                           {.on_step_end = on_step, .on_epoch_end = on_epoch, .user = w},
                           tfl_step_checkpoint_callback(&sc)};
    int n_cbs = 4;
    tfl_status st = TFL_OK;
    st = tfl__run_dp_fit(&r->dp, r->ctx, r->cfg, &r->cancel, fo, cbs, &n_cbs, 8, &guard);
    if (st != TFL_OK) return st;
    fo->callbacks = cbs;
    fo->n_callbacks = n_cbs;
    if (r->dp.writer && board_init(r, tb, fo->initial_step, s->resolved, &s->bf)) {
        cbs[n_cbs] = tb->inner;
        cbs[n_cbs].on_train_begin = board_begin;
        cbs[n_cbs].user = tb;
        fo->n_callbacks = ++n_cbs;
    }
    fo->progress = r->o.progress;
    emit(r, TFL_RUN_EVENT_NOTE, NULL, NULL, "run directory: %s", r->dir);
    int epochs = fo->epochs ? fo->epochs : 1;
    double t0 = now_seconds();
    if (fo->initial_epoch < epochs) st = tfl_model_fit(r->model, r->data.train, fo, &s->h);
    else res->trained_already = true;
    res->seconds = now_seconds() - t0;
    res->steps = w->steps;
    res->skipped_steps = guard.skipped > 0;
    snprintf(res->event_file, sizeof res->event_file, "%s", s->bf.events[0]);
    if (st != TFL_OK) return st;
    if (r->cancel) {
        res->cancelled = true;
        res->stopped_epoch = w->stopped_epoch;
        res->saved = sc.last_step == w->steps;
        return TFL_OK;
    }
    /* the final state (after the last epoch's end: a resume finds nothing left to do) */
    if (fo->initial_epoch < epochs && r->dp.writer) {
        s->state = (tfl_train_state){.epoch = epochs, .step = w->steps, .shuffle_seed = fo->seed,
                                     .history = &s->h};
        TFL_TRY(save_final(r, mgr, &s->state, &so));
    }
    res->saved = true;
    if (r->dp.writer) write_curves(r, res);
    if (r->data.test)
        TFL_TRY(tfl_model_evaluate_replicated(r->model, r->data.test, fo->batch_size,
                                              fo->replicas, &res->test_loss, &res->test_accuracy));
    return TFL_OK;
}

/* Reads what the run directory holds, compares the configs and restores the checkpoint:
 * nothing is written. */
static tfl_status prepare(session *s, bool *resume)
{
    tfl_run *r = s->r;
    tfl_run_result *res = s->res;
    char path[4200];
    snprintf(path, sizeof path, "%s/config.yaml", r->dir);
    struct stat sb;
    s->bf.existed = stat(r->dir, &sb) == 0;
    s->bf.config = read_text(path);
    s->bf.csv = read_text(r->csv);
    snprintf(path, sizeof path, "%s/run.log", r->dir);
    s->bf.log_size = stat(path, &sb) == 0 ? sb.st_size : -1;
    snprintf(path, sizeof path, "%s/config.yaml", r->dir);
    int64_t step = -1;
    *resume = s->bf.config && tfl_ckpt_latest(r->ctx, r->cdir, NULL, res->checkpoint,
                                              sizeof res->checkpoint, &step) == TFL_OK;
    if (!*resume) {
        tfl_ctx_clear_error(r->ctx); /* NOT_FOUND: nothing to resume */
        res->checkpoint[0] = 0;
    }
    if (s->bf.config)
        TFL_TRY(compare(r, *resume ? res->checkpoint : NULL, s->bf.config, path, &s->ch,
                        &res->refused));
    TFL_TRY(tfl_config_fit_opts(r->cfg, &r->data, &s->fo));
    int epochs = s->fo.epochs ? s->fo.epochs : 1;
    s->h.logs = calloc((size_t)epochs, sizeof *s->h.logs);
    TFL_CHECK(r->ctx, s->h.logs, TFL_RESOURCE_EXHAUSTED, "run: out of memory (history)");
    s->h.cap = epochs;
    s->state = (tfl_train_state){.shuffle_seed = s->fo.seed, .history = &s->h};
    /* the checkpoint restores before anything of the run changes */
    if (*resume && tfl_train_state_restore(r->model, res->checkpoint, &s->state) != TFL_OK) {
        tfl_error e = tfl_ctx_error(r->ctx);
        char msg[TFL_MSG_SIZE];
        snprintf(msg, sizeof msg, "%s", e.message);
        tfl_ctx_clear_error(r->ctx);
        return tfl__set_error(r->ctx, e.code, "resuming: %s; nothing was written", msg);
    }
    return TFL_OK;
}

tfl_status tfl_run_train(tfl_run *r, tfl_run_result *res)
{
    if (!r || !res) return TFL_INVALID_ARGUMENT;
    if (!run_alive(r, "tfl_run_train")) return TFL_MISUSE;
    memset(res, 0, sizeof *res);
    res->test_loss = res->test_accuracy = NAN;
    res->stopped_epoch = -1;
    snprintf(res->run_dir, sizeof res->run_dir, "%s", r->dir);
    snprintf(res->metrics_csv, sizeof res->metrics_csv, "%s", r->csv);
    r->cancel = r->save_request = 0;
    session s = {.r = r, .res = res};
    s.resolved = tfl_config_format(r->cfg);
    bool resume = false, writer = r->dp.writer;
    tfl_status st = s.resolved ? prepare(&s, &resume) : tfl_ctx_status(r->ctx);
    if (st != TFL_OK) { /* nothing was written */
        before_free(&s.bf);
        free(s.h.logs);
        return res->refused ? TFL_OK : st;
    }
    /* every process has read the run directory before the writer writes it */
    char path[4200];
    snprintf(path, sizeof path, "%s/config.yaml", r->dir);
    st = barrier(r);
    if (st == TFL_OK && writer && tfl_make_dirs(r->ctx, r->dir) == TFL_OK)
        st = tfl_file_write_atomic(r->ctx, path, s.resolved, strlen(s.resolved));
    else if (st == TFL_OK && writer)
        st = tfl_ctx_status(r->ctx);
    if (st == TFL_OK) st = barrier(r);
    /* checkpoints: the writer's manager (checkpoint.keep of them) */
    tfl_ckpt_manager *mgr = NULL;
    if (st == TFL_OK && writer &&
        !(mgr = tfl_ckpt_manager_new(
              r->ctx, r->cdir,
              &(tfl_ckpt_manager_opts){.max_to_keep =
                                           (int)GETV(SEC(r->cfg, "checkpoint"), "keep")->i})))
        st = tfl_ctx_status(r->ctx);
    board tb = {0};
    watch w = {.run = r, .stopped_epoch = -1};
    if (st == TFL_OK) {
        if (resume) {
            s.fo = tfl_fit_opts_resume(s.fo, &s.state);
            res->resumed = true;
            emit(r, TFL_RUN_EVENT_NOTE, NULL, NULL, "resuming from %s (epoch %d, batch %lld, "
                 "step %lld)", res->checkpoint, s.state.epoch + 1, (long long)s.state.batch,
                 (long long)s.state.step);
            run_log(r, &s.ch, "resumed from %s at step %lld", res->checkpoint,
                    (long long)s.state.step);
        } else {
            run_log(r, &s.ch, "%s from %s", s.bf.config ? "started again" : "started",
                    r->cfg->file);
        }
        w.steps = s.fo.initial_step;
        st = fit_run(&s, mgr, &tb, &w);
    }
    res->epochs = s.h.count;
    if (s.h.count > 0) res->last = s.h.logs[s.h.count <= s.h.cap ? s.h.count - 1 : s.h.cap - 1];
    /* a run that failed before its first step leaves the directory as it found it */
    if (st != TFL_OK && w.steps == s.fo.initial_step && writer) {
        tfl_error e = tfl_ctx_error(r->ctx);
        char msg[TFL_MSG_SIZE];
        snprintf(msg, sizeof msg, "%s", e.message);
        tfl_ckpt_manager_free(mgr);
        mgr = NULL;
        tfl_ctx_clear_error(r->ctx);
        undo(r, &s.bf);
        tfl_ctx_clear_error(r->ctx);
        tfl__set_error(r->ctx, e.code, "%s; no step was trained: the run directory '%s' %s", msg,
                       r->dir, s.bf.existed ? "is as it was" : "was removed");
        res->event_file[0] = 0;
    }
    free(tb.text);
    tfl_ckpt_manager_free(mgr);
    before_free(&s.bf);
    free(s.h.logs);
    return st;
}

/* ---- the trained model --------------------------------------------------------------------- */

tfl_status tfl_run_restore(tfl_run *r, const char *checkpoint, char *used, size_t size,
                           int64_t *step)
{
    if (!r) return TFL_INVALID_ARGUMENT;
    if (!run_alive(r, "tfl_run_restore")) return TFL_MISUSE;
    char path[4400];
    int64_t at = -1;
    if (checkpoint) { /* the one asked for, or an error: never another one */
        snprintf(path, sizeof path, "%s", checkpoint);
    } else if (tfl_ckpt_latest(r->ctx, r->cdir, NULL, path, sizeof path, &at) != TFL_OK) {
        tfl_ctx_clear_error(r->ctx);
        return tfl__set_error(r->ctx, TFL_NOT_FOUND, "no usable checkpoint in '%s': train first",
                              r->cdir);
    }
    TFL_TRY(tfl_model_restore_weights(r->model, path, true));
    if (used && size) snprintf(used, size, "%s", path);
    if (step) *step = at;
    return TFL_OK;
}

bool tfl__run_parts(tfl_run *r, const char *what, tfl_config **cfg, tfl_dataset **train)
{
    if (!r || !run_alive(r, what)) return false;
    *cfg = r->cfg;
    *train = r->data.train;
    return true;
}

tfl_status tfl_run_evaluate(tfl_run *r, double *loss, double *accuracy, const char **which,
                            int64_t *examples)
{
    if (!r) return TFL_INVALID_ARGUMENT;
    if (!run_alive(r, "tfl_run_evaluate")) return TFL_MISUSE;
    tfl_dataset *data = r->data.test ? r->data.test : r->data.validation ? r->data.validation
                                                                         : r->data.train;
    if (which) *which = r->data.test ? "test" : r->data.validation ? "validation" : "train";
    if (examples) *examples = tfl_dataset_size(data);
    const tfl_replicas *rep = tfl__run_dp_replicas(&r->dp, r->ctx, r->cfg);
    if (!rep && tfl__run_dp_parallel(&r->dp)) return tfl_ctx_status(r->ctx);
    double l = NAN, a = NAN;
    TFL_TRY(tfl_model_evaluate_replicated(r->model, data,
                                          GETV(SEC(r->cfg, "training"), "batch_size")->i, rep,
                                          &l, &a));
    if (loss) *loss = l;
    if (accuracy) *accuracy = a;
    return TFL_OK;
}

tfl_tensor *tfl_run_predict(tfl_run *r, const char *path, bool *labelled, double *loss,
                            double *accuracy)
{
    if (!r || !run_alive(r, "tfl_run_predict")) return NULL;
    if (labelled) *labelled = false;
    tfl_dataset *ds = tfl_config_load_examples(r->cfg, &r->data, path);
    if (!ds) return NULL;
    double l = NAN, a = NAN;
    tfl_tensor *out = NULL;
    bool has = tfl_dataset_has_labels(ds); /* the training layout: scored, never an input */
    if (!has || tfl_model_evaluate(r->model, ds, 256, &l, &a) == TFL_OK) {
        tfl_frame_push(r->ctx);
        out = tfl_keep(tfl_model_predict(r->model, ds, 256));
        tfl_frame_pop(r->ctx);
    }
    if (out && has) {
        if (labelled) *labelled = true;
        if (loss) *loss = l;
        if (accuracy) *accuracy = a;
    }
    tfl_dataset_free(ds);
    return out;
}

tfl_status tfl_run_write_predictions(tfl_run *r, const tfl_tensor *out, FILE *f)
{
    if (!r) return TFL_INVALID_ARGUMENT;
    if (!run_alive(r, "tfl_run_write_predictions")) return TFL_MISUSE;
    TFL_CHECK(r->ctx, out && f && tfl_tensor_rank(out) == 2, TFL_INVALID_ARGUMENT,
              "tfl_run_write_predictions: expected outputs of rank 2 and a file");
    int loss = (int)GETV(r->cfg->res, "loss")->i; /* tfl__enum_loss's order */
    bool softmax = loss == 0 || loss == 1, sigmoid = loss == 2, classes = softmax || sigmoid;
    int64_t n = tfl_tensor_dim(out, 0), k = tfl_tensor_dim(out, 1);
    int64_t count = 0, total = 0; /* a tensor's shape: its element count already fits */
    TFL_CHECK(r->ctx, !tfl__mul_overflow_i64(n, k, &count) &&
                          !tfl__mul_overflow_i64(count, (int64_t)sizeof(double), &total),
              TFL_RESOURCE_EXHAUSTED, "tfl_run_write_predictions: %lld x %lld outputs",
              (long long)n, (long long)k);
    size_t bytes = (size_t)total;
    double *v = tfl__host_alloc(r->ctx, bytes ? bytes : 1, 64);
    if (!v) return tfl_ctx_status(r->ctx);
    tfl_frame_push(r->ctx);
    tfl_tensor *p = (tfl_tensor *)(uintptr_t)out;
    p = softmax ? tfl_softmax(r->ctx, p, -1) : sigmoid ? tfl_sigmoid(r->ctx, p) : p;
    p = p ? tfl_cast(r->ctx, p, TFL_DTYPE_FLOAT64) : NULL;
    tfl_status st = p ? tfl_tensor_to_host(p, v, bytes) : tfl_ctx_status(r->ctx);
    tfl_frame_pop(r->ctx);
    if (st == TFL_OK) {
        if (classes) fprintf(f, "class");
        for (int64_t c = 0; c < k; c++)
            fprintf(f, "%s%s%lld", classes || c ? "," : "", classes ? "p" : "y", (long long)c);
        fputc('\n', f);
        for (int64_t i = 0; i < n; i++) {
            const double *row = v + i * k;
            if (classes) {
                int64_t best = 0;
                for (int64_t c = 1; c < k; c++)
                    if (row[c] > row[best]) best = c;
                fprintf(f, "%lld", (long long)(sigmoid && k == 1 ? row[0] > 0.5 : best));
            }
            for (int64_t c = 0; c < k; c++)
                fprintf(f, "%s%.6g", classes || c ? "," : "", row[c]);
            fputc('\n', f);
        }
        if (ferror(f))
            st = tfl__set_error(r->ctx, TFL_FAILED_PRECONDITION,
                                "tfl_run_write_predictions: writing the predictions failed");
    }
    tfl__host_free(r->ctx, v);
    return st;
}
