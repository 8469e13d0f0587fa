/*
 * examples/cli/run.c: `tapeflow train` and `tapeflow config`: a config loaded and validated
 * once, the model, optimizer and data built from it by the library, the run directory, and
 * tfl_model_fit with the callbacks the config asks for (metrics CSV, the non-finite guard,
 * progress lines, a clean stop on SIGINT/SIGTERM).
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- files ----------------------------------------------------------------------------------- */

/* The whole file, NUL-terminated (malloc'ed); NULL when it cannot be read. */
static char *read_file(const char *path)
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

/* A resolved config without its first line, a comment naming the file it came from. */
static const char *body(const char *resolved)
{
    const char *nl = resolved[0] == '#' ? strchr(resolved, '\n') : NULL;
    return nl ? nl + 1 : resolved;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- callbacks of the run -------------------------------------------------------------------- */

typedef struct run_state {
    int64_t log_interval;   /* steps between progress lines off a terminal; 0: none */
    bool quiet, tty;
    int64_t steps;
    int stopped_epoch;      /* the epoch a signal stopped, -1 */
} run_state;

static tfl_status on_step(tfl_model *m, const tfl_step_logs *lg, void *user, bool *stop)
{
    run_state *r = user;
    r->steps = lg->step;
    if (!r->quiet && !r->tty && r->log_interval > 0 && lg->step % r->log_interval == 0) {
        tfl_step_logs read; /* fit syncs on these steps (sync_every): no extra read */
        tfl_status st = tfl_step_logs_read(m, lg, &read);
        if (st != TFL_OK) return st;
        printf("epoch %d - batch %lld/%lld - step %lld - loss: %.4f\n", read.epoch + 1,
               (long long)read.batch + 1, (long long)read.batches, (long long)read.step,
               read.loss);
    }
    if (cli_interrupted) {
        *stop = true;
        r->stopped_epoch = lg->epoch;
    }
    return TFL_OK;
}

/* A resolved scalar of the config; "" when there is none. */
static const char *cfg_get(const tfl_config *cfg, const char *path, char *buf, size_t size)
{
    if (tfl_config_get(cfg, path, buf, size) < 0) buf[0] = 0;
    return buf;
}

/* A resolved string of the config without YAML's quotes ("" when there is none, or when it
 * has escapes, which no name or path tapeflow reads needs). */
static const char *cfg_string(const tfl_config *cfg, const char *path, char *buf, size_t size)
{
    int n = tfl_config_get(cfg, path, buf, size);
    if (n < 0 || (size_t)n >= size) return buf[0] = 0, buf;
    if (n >= 2 && buf[0] == '"' && buf[n - 1] == '"') {
        if (memchr(buf + 1, '\\', (size_t)n - 2)) return buf[0] = 0, buf;
        memmove(buf, buf + 1, (size_t)n - 2);
        buf[n - 2] = 0;
    }
    return buf;
}

/* ---- train ----------------------------------------------------------------------------------- */

typedef struct run {
    tfl_ctx *ctx;
    tfl_config *cfg;
    tfl_model *model;
    tfl_optimizer *opt;
    tfl_config_datasets data;
} run;

static void run_free(run *r)
{
    tfl_config_datasets_free(&r->data);
    tfl_model_free(r->model);
    tfl_optimizer_free(r->opt);
    tfl_config_free(r->cfg);
    tfl_ctx_free(r->ctx);
}

/* Builds everything the config describes; an error here is the config's (exit 2) unless it
 * is a lack of memory. Nothing is written. */
static int build(run *r, const cli_args *a)
{
    tfl_status st;
    /* the library's warnings (a damaged checkpoint skipped, a device fallen back) on stderr
     * and in run.log */
    r->ctx = tfl_ctx_new(&(tfl_ctx_opts){.log_fn = cli_log, .log_level = TFL_LOG_WARNING}, &st);
    if (!r->ctx) {
        cli_error("no context: %s", tfl_status_name(st));
        return CLI_RUNTIME;
    }
    int code;
    if (!(r->cfg = cli_load_config(r->ctx, a, &code))) return code;
    /* training.device: tfl_config_apply_context opens its scope (soft placement: a GPU this
     * build or machine lacks falls back to the CPU); under mpirun one rank drives one GPU
     * (dist.c), a scope inside that one */
    char req[64], dev[64];
    cfg_string(r->cfg, "training.device", req, sizeof req);
    if (tfl_config_apply_context(r->cfg) != TFL_OK) {
        cli_error("%s: %s", a->config, tfl_ctx_error(r->ctx).message);
        return CLI_USAGE;
    }
    if ((code = cli_dist_device(req, dev, sizeof dev)) != CLI_OK) return code;
    if (dev[0] && tfl_device_scope_push(r->ctx, dev) != TFL_OK) {
        cli_error("%s: training.device: %s", a->config, tfl_ctx_error(r->ctx).message);
        return CLI_USAGE;
    }
    if ((r->model = tfl_config_build_model(r->cfg)) &&
        (r->opt = tfl_config_build_optimizer(r->cfg)) &&
        tfl_config_compile(r->cfg, r->model, r->opt) == TFL_OK &&
        tfl_config_build_datasets(r->cfg, &r->data) == TFL_OK)
        return CLI_OK;
    tfl_error e = tfl_ctx_error(r->ctx);
    cli_error("%s: %s", a->config, e.message);
    fprintf(stderr, "tapeflow: nothing was run or written\n");
    return e.code == TFL_RESOURCE_EXHAUSTED ? CLI_RUNTIME : CLI_USAGE;
}

/* The run's checkpoint folder: checkpoint.directory, or <run dir>/checkpoints. */
static const char *ckpt_dir(const tfl_config *cfg, const char *run_dir, char *buf, size_t size)
{
    char dir[4096];
    cfg_string(cfg, "checkpoint.directory", dir, sizeof dir);
    if (dir[0] && strcmp(dir, "null")) snprintf(buf, size, "%s", dir);
    else snprintf(buf, size, "%s/checkpoints", run_dir);
    return buf;
}

/* ---- the config a run was trained with --------------------------------------------------- */

/* The keys changed since the run began (tfl_config_diff), for run.log. */
typedef struct changes {
    const tfl_config_change *v; /* owned by the run's config */
    int64_t n;
    const char *since;          /* the file the earlier config came from */
    bool forced;                /* --allow-config-change let changes of the training through */
} changes;

/*
 * Compares the config with the one the run was trained with: the newest checkpoint's
 * "tapeflow.config" (what its state was trained with), else the run directory's config.yaml.
 * Shows every changed key; refuses (CLI_USAGE, nothing written) when a key other than
 * training.epochs, training.sync_every, logging.* and checkpoint.* changed, unless
 * --allow-config-change.
 */
static int compare_configs(run *r, const cli_args *a, const char *ckpt, const char *was,
                           const char *yaml_path, changes *out)
{
    static char since[4400];
    tfl_ckpt *ck = ckpt ? tfl_ckpt_open(r->ctx, ckpt) : NULL;
    const char *ref = ck ? tfl_ckpt_metadata(ck, "tapeflow.config") : NULL;
    if (!ck) tfl_ctx_clear_error(r->ctx);
    snprintf(since, sizeof since, "%s", ref ? ckpt : yaml_path);
    out->since = since;
    const char *text = body(ref ? ref : was);
    out->n = tfl_config_diff(r->cfg, text, strlen(text), &out->v);
    tfl_ckpt_close(ck);
    if (out->n < 0) {
        out->n = 0;
        cli_error("cannot compare the config with the one of '%s': %s", since,
                  tfl_ctx_error(r->ctx).message);
        return CLI_RUNTIME;
    }
    if (out->n == 0) return CLI_OK;
    int64_t fixed = 0;
    for (int64_t i = 0; i < out->n; i++)
        fixed += !out->v[i].resumable;
    fprintf(stderr, "tapeflow: the config differs from the one of '%s' in %lld key%s:\n", since,
            (long long)out->n, out->n == 1 ? "" : "s");
    for (int64_t i = 0; i < out->n; i++) {
        const tfl_config_change *c = &out->v[i];
        fprintf(stderr, "  %s: %s -> %s%s\n", c->path, c->was ? c->was : "(absent)",
                c->now ? c->now : "(absent)", c->resumable ? "" : "   [changes the training]");
    }
    if (fixed > 0 && !a->allow_config_change) {
        cli_error("refusing to continue this run: %lld changed key%s change%s what is trained; "
                  "a run continues with changes to training.epochs, training.sync_every, "
                  "logging.* and checkpoint.* only. Pass --allow-config-change to continue anyway, or give another "
                  "--run-dir; nothing was written",
                  (long long)fixed, fixed == 1 ? "" : "s", fixed == 1 ? "s" : "");
        return CLI_USAGE;
    }
    out->forced = fixed > 0;
    return CLI_OK;
}

/* Appends a line (and the config changes, when there are any) to <run dir>/run.log. */
static void run_log(const char *dir, const changes *ch, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void run_log(const char *dir, const changes *ch, const char *fmt, ...)
{
    if (!cli_dist_writer()) return; /* under mpirun, rank 0 alone writes */
    char path[4200], when[32];
    snprintf(path, sizeof path, "%s/run.log", dir);
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "tapeflow: warning: cannot append to '%s': %s\n", path, strerror(errno));
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
    char *warned = cli_take_warnings(); /* what the library warned about since the last line */
    for (const char *w = warned; w && *w;) {
        const char *nl = strchr(w, '\n');
        int len = nl ? (int)(nl - w) : (int)strlen(w);
        fprintf(f, "  %.*s\n", len, w);
        w += len + (nl != NULL);
    }
    free(warned);
    if (ch->n > 0)
        fprintf(f, "  config changes since %s%s:\n", ch->since,
                ch->forced ? " (with --allow-config-change)" : "");
    for (int64_t i = 0; i < ch->n; i++)
        fprintf(f, "    %s: %s -> %s\n", ch->v[i].path, ch->v[i].was ? ch->v[i].was : "(absent)",
                ch->v[i].now ? ch->v[i].now : "(absent)");
    if (fclose(f) != 0)
        fprintf(stderr, "tapeflow: warning: cannot write '%s': %s\n", path, strerror(errno));
}

/* Saves the training state after fit's last step through the manager. */
static tfl_status save_final(run *r, tfl_ckpt_manager *mgr, const tfl_train_state *state,
                             const tfl_ckpt_save_opts *so)
{
    char path[4200];
    if (tfl_ckpt_manager_path(mgr, state->step, path, sizeof path) >= (int)sizeof path)
        return TFL_INVALID_ARGUMENT;
    tfl_status st = tfl_train_state_save(r->model, path, state, so);
    return st == TFL_OK ? tfl_ckpt_manager_commit(mgr, state->step) : st;
}

/* What a run directory held before a run wrote to it: a run that fails before its first
 * step puts it back (a new directory goes again). */
typedef struct before {
    bool existed;        /* the directory */
    char *config;        /* config.yaml's text (NULL: none) */
    char *csv;           /* the metrics CSV's text (NULL: none) */
    off_t log_size;      /* run.log's size (-1: none) */
} before;

static off_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? sb.st_size : -1;
}

/* A file back to its size before the run (-1: it goes). */
static void cut_back(const char *path, off_t size)
{
    if (size < 0) unlink(path);
    else if (truncate(path, size) != 0 && errno != ENOENT)
        fprintf(stderr, "tapeflow: warning: cannot restore '%s': %s\n", path, strerror(errno));
}

/* A resumed run's metrics CSV keeps its header and the lines of the epochs before `epoch`:
 * the lines a run wrote after the checkpoint it resumes from are written again. */
static void trim_csv(tfl_ctx *ctx, const char *path, const char *text, int epoch)
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
    char *cut = strndup(text, keep);
    if (!cut || tfl_file_write_atomic(ctx, path, cut, keep) != TFL_OK) {
        fprintf(stderr, "tapeflow: warning: cannot drop the lines past epoch %d of '%s': %s\n",
                epoch, path, cut ? tfl_ctx_error(ctx).message : "out of memory");
        tfl_ctx_clear_error(ctx);
    }
    free(cut);
}

static void undo_run(tfl_ctx *ctx, const before *b, const char *dir, const char *cdir,
                     const char *csv, const cli_tensorboard *t)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/config.yaml", dir);
    if (b->config) tfl_file_write_atomic(ctx, p, b->config, strlen(b->config));
    else unlink(p);
    snprintf(p, sizeof p, "%s/run.log", dir);
    cut_back(p, b->log_size);
    if (b->csv) tfl_file_write_atomic(ctx, csv, b->csv, strlen(b->csv));
    else unlink(csv);
    const char *events[] = {t->event_file, t->val_event_file};
    for (int i = 0; i < 2; i++)
        if (events[i][0]) unlink(events[i]);
    const char *sub[] = {"train", "validation"};
    for (int i = 0; i < 2; i++) { /* only when empty */
        snprintf(p, sizeof p, "%s/%s", dir, sub[i]);
        rmdir(p);
    }
    rmdir(cdir);
    if (!b->existed) rmdir(dir);
}

int cli_train(int argc, char **argv)
{
    cli_args a;
    int code = cli_parse("train", argc, argv, 2, CLI_OPT_SET | CLI_OPT_RUN_DIR | CLI_OPT_QUIET | CLI_OPT_ALLOW, &a);
    if (code != CLI_OK || (code = cli_dist_start()) != CLI_OK) return code;
    if (!cli_dist_writer()) a.quiet = true; /* progress from rank 0 only (dist.c) */
    run r = {0};
    if ((code = build(&r, &a)) != CLI_OK) {
        run_free(&r);
        return code;
    }
    const char *resolved = tfl_config_format(r.cfg);
    char dir[4096], path[4200], buf[512], cdir[4200], latest[4400];
    cli_run_dir(r.cfg, &a, dir, sizeof dir);
    ckpt_dir(r.cfg, dir, cdir, sizeof cdir);
    snprintf(path, sizeof path, "%s/config.yaml", dir);
    char *was = resolved ? read_file(path) : NULL;
    bool same_run = was != NULL;
    struct stat dir_sb;
    before bf = {.existed = stat(dir, &dir_sb) == 0};
    /* resuming: the newest checkpoint, and the config it was trained with (else the run
     * directory's config.yaml) compared with this one key by key */
    int64_t ck_step = -1;
    bool resume = same_run &&
                  tfl_ckpt_latest(r.ctx, cdir, NULL, latest, sizeof latest, &ck_step) == TFL_OK;
    if (!resume) tfl_ctx_clear_error(r.ctx); /* NOT_FOUND: nothing to resume */
    changes ch = {0};
    if (same_run && (code = compare_configs(&r, &a, resume ? latest : NULL, was, path, &ch)) != CLI_OK) {
        free(was);
        run_free(&r);
        return code;
    }
    bf.config = was; /* freed at the end */
    char csv_path[4200];
    cfg_string(r.cfg, "logging.metrics_csv", buf, sizeof buf);
    if (buf[0] && strcmp(buf, "null")) snprintf(csv_path, sizeof csv_path, "%s", buf);
    else snprintf(csv_path, sizeof csv_path, "%s/metrics.csv", dir);
    bf.csv = read_file(csv_path);
    snprintf(buf, sizeof buf, "%.400s/run.log", dir);
    bf.log_size = file_size(buf);
    tfl_fit_opts fo;
    if (tfl_config_fit_opts(r.cfg, &r.data, &fo) != TFL_OK) {
        code = cli_ctx_error(r.ctx, "fit options");
        run_free(&r);
        return code;
    }
    int epochs = fo.epochs ? fo.epochs : 1;
    tfl_epoch_logs *logs = calloc((size_t)epochs, sizeof *logs);
    tfl_history h = {logs, logs ? epochs : 0, 0};
    tfl_train_state state = {.shuffle_seed = fo.seed, .history = &h};
    /* the checkpoint restores before anything of the run changes: a refused restore (a model
     * that no longer fits it) leaves the run directory as it was */
    if (resume && tfl_train_state_restore(r.model, latest, &state) != TFL_OK) {
        code = cli_ctx_error(r.ctx, "resuming");
        fprintf(stderr, "tapeflow: nothing was written\n");
        free(logs);
        free(was);
        free(bf.csv);
        run_free(&r);
        return code;
    }
    /* under mpirun every rank has read the run directory before rank 0 writes it */
    bool writer = cli_dist_writer();
    if (cli_dist_barrier() != TFL_OK ||
        !resolved ||
        (writer && (tfl_make_dirs(r.ctx, dir) != TFL_OK ||
                    tfl_file_write_atomic(r.ctx, path, resolved, strlen(resolved)) != TFL_OK)) ||
        cli_dist_barrier() != TFL_OK) {
        code = cli_ctx_error(r.ctx, !resolved ? "resolving the config" : "the run directory");
        if (writer) undo_run(r.ctx, &bf, dir, cdir, csv_path, &(cli_tensorboard){0});
        free(logs);
        free(was);
        free(bf.csv);
        run_free(&r);
        return code;
    }
    cli_tensorboard tbl = {0};
    run_state rs = {.quiet = a.quiet, .tty = isatty(STDOUT_FILENO), .stopped_epoch = -1};

    /* checkpoints: every checkpoint.every epochs (or checkpoint.every_steps steps), on
     * SIGINT/SIGTERM and at the end; resume
     * from the newest one of this run */
    tfl_ckpt_manager *mgr = !writer ? NULL : tfl_ckpt_manager_new( /* rank 0 alone saves */
        r.ctx, cdir,
        &(tfl_ckpt_manager_opts){
            .max_to_keep = (int)strtol(cfg_get(r.cfg, "checkpoint.keep", buf, sizeof buf), NULL, 10)});
    if (writer && !mgr) {
        code = cli_ctx_error(r.ctx, "the checkpoint directory");
        goto out;
    }
    const char *meta_keys[] = {"tapeflow.config"}, *meta_values[] = {resolved};
    tfl_ckpt_save_opts so = {.n_metadata = 1, .metadata_keys = meta_keys,
                             .metadata_values = meta_values};
    double t_start = now_seconds();
    if (resume) {
        if (!a.quiet)
            printf("resuming from %s (epoch %d, batch %lld, step %lld)\n", latest, state.epoch + 1,
                   (long long)state.batch, (long long)state.step);
        fo = tfl_fit_opts_resume(fo, &state);
        run_log(dir, &ch, "resumed from %s at step %lld", latest, (long long)state.step);
    } else {
        run_log(dir, &ch, "%s from %s", same_run ? "started again" : "started", a.config);
    }
    int64_t n = tfl_dataset_size(r.data.train), bs = fo.batch_size ? fo.batch_size : 32;
    int64_t per_epoch = fo.drop_remainder ? n / bs : n / bs + (n % bs != 0);
    int64_t every = strtoll(cfg_get(r.cfg, "checkpoint.every", buf, sizeof buf), NULL, 10);
    int64_t every_steps =
        strtoll(cfg_get(r.cfg, "checkpoint.every_steps", buf, sizeof buf), NULL, 10);
    tfl_step_checkpoint sc = {.manager = mgr,
                              .every_steps = every_steps > 0                 ? every_steps
                                             : every > 0 && per_epoch > 0 ? every * per_epoch
                                                                          : 0,
                              .request = &cli_save_request,
                              .stop_on_request = true,
                              .shuffle_seed = fo.seed,
                              .history = &h,
                              .save_opts = &so,
                              .last_step = -1};

    /* callbacks: metrics CSV, the non-finite guard, checkpoints, progress lines and signals */
    tfl_csv_logger csv = {.path = csv_path, .append = fo.initial_epoch > 0 || fo.initial_batch > 0};
    if (csv.append && writer) trim_csv(r.ctx, csv_path, bf.csv, fo.initial_epoch);
    tfl_nonfinite_guard guard = {
        .mode = strcmp(cfg_get(r.cfg, "training.on_nonfinite", buf, sizeof buf), "skip")
                    ? TFL_NONFINITE_HALT
                    : TFL_NONFINITE_SKIP};
    rs.steps = fo.initial_step;
    rs.log_interval = strtoll(cfg_get(r.cfg, "logging.log_interval", buf, sizeof buf), NULL, 10);
    tfl_callback cbs[8] = {tfl_csv_logger_callback(&csv), tfl_nonfinite_guard_callback(&guard),
                           {.on_step_end = on_step, .user = &rs},
                           tfl_step_checkpoint_callback(&sc)};
    int n_cbs = 4; /* under mpirun (dist.c): rank 0 alone writes metrics and checkpoints */
    if ((code = cli_dist_fit(r.ctx, r.cfg, &fo, cbs, &n_cbs, 8, &guard)) != CLI_OK) goto out;
    fo.callbacks = cbs;
    fo.n_callbacks = n_cbs;
    /* TensorBoard (logs.c): event files in <dir>/train and <dir>/validation, closed (flushed)
     * by fit's train end, also when a signal stops it; rank 0's alone under mpirun */
    if (writer && cli_tensorboard_init(&tbl, r.cfg, dir, fo.initial_step, resolved))
        cbs[fo.n_callbacks++] = cli_tensorboard_callback(&tbl);
    fo.progress = a.quiet ? NULL : stdout;
    if (!a.quiet) printf("run directory: %s\n", dir);
    fflush(stdout);

    cli_catch_signals();
    tfl_status st = TFL_OK;
    if (fo.initial_epoch < epochs) st = tfl_model_fit(r.model, r.data.train, &fo, &h);
    else if (!a.quiet) printf("trained already: %d epochs (%s)\n", epochs, latest);
    if (st != TFL_OK) {
        code = cli_ctx_error(r.ctx, "training");
    } else if (cli_interrupted) {
        fprintf(stderr, "tapeflow: interrupted (%s) in epoch %d after %lld steps; %s; %s holds "
                "the complete epochs; 'tapeflow train' with the same config resumes\n",
                cli_interrupted == SIGTERM ? "SIGTERM" : "SIGINT", rs.stopped_epoch + 1,
                (long long)rs.steps,
                sc.last_step == rs.steps ? "a checkpoint of that step was saved"
                                         : "no checkpoint could be saved",
                csv_path);
        if (tbl.event_file[0])
            fprintf(stderr, "tapeflow: event file (flushed): %s\n", tbl.event_file);
        code = CLI_INTERRUPTED;
    } else {
        /* the final state (after the last epoch's end: a resume finds nothing left to do) */
        if (fo.initial_epoch < epochs && writer) {
            state = (tfl_train_state){.epoch = epochs, .step = rs.steps, .shuffle_seed = fo.seed,
                                      .history = &h};
            if (save_final(&r, mgr, &state, &so) != TFL_OK) {
                code = cli_ctx_error(r.ctx, "saving the final checkpoint");
                goto out;
            }
        }
        double loss = NAN, acc = NAN;
        if (r.data.test &&
            tfl_model_evaluate_replicated(r.model, r.data.test, fo.batch_size, fo.replicas,
                                          &loss, &acc) != TFL_OK) {
            code = cli_ctx_error(r.ctx, "evaluating the test data");
            goto out;
        }
        if (!a.quiet && r.data.test) {
            printf("test_loss %.4f", loss);
            if (!isnan(acc)) printf(" - test_accuracy %.4f", acc);
            printf("\n");
        }
        if (!a.quiet && h.count > 0) {
            const tfl_epoch_logs *l = &logs[h.count < h.cap ? h.count - 1 : h.cap - 1];
            printf("trained %d epoch%s, %lld steps in %.1f s; final loss %.4f", h.count,
                   h.count == 1 ? "" : "s", (long long)rs.steps, now_seconds() - t_start, l->loss);
            if (!isnan(l->accuracy)) printf(", accuracy %.4f", l->accuracy);
            if (!isnan(l->val_loss)) printf(", val_loss %.4f", l->val_loss);
            if (!isnan(l->val_accuracy)) printf(", val_accuracy %.4f", l->val_accuracy);
            printf("%s; run directory %s\n", guard.skipped ? " (non-finite steps skipped)" : "",
                   dir);
        }
        if (writer) /* curves.svg: rank 0's files */
            cli_train_logs_end(r.ctx, r.cfg, dir, csv_path, tbl.enabled ? &tbl : NULL, a.quiet);
        code = CLI_OK;
    }
out:
    /* a run that failed before its first step leaves the directory as it found it */
    if (code != CLI_OK && code != CLI_INTERRUPTED && rs.steps == fo.initial_step && writer) {
        tfl_ckpt_manager_free(mgr);
        mgr = NULL;
        undo_run(r.ctx, &bf, dir, cdir, csv_path, &tbl);
        fprintf(stderr, "tapeflow: no step was trained; the run directory '%s' %s\n", dir,
                bf.existed ? "is as it was" : "was removed");
    }
    cli_tensorboard_free(&tbl);
    tfl_ckpt_manager_free(mgr);
    free(logs);
    free(was);
    free(bf.csv);
    run_free(&r);
    return code;
}

/* ---- config ---------------------------------------------------------------------------------- */

int cli_config(int argc, char **argv)
{
    cli_args a;
    int code = cli_parse("config", argc, argv, 2, CLI_OPT_SET, &a);
    if (code != CLI_OK) return code;
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    if (!ctx) {
        cli_error("no context: %s", tfl_status_name(st));
        return CLI_RUNTIME;
    }
    tfl_config *cfg = cli_load_config(ctx, &a, &code);
    if (cfg) {
        const char *text = tfl_config_format(cfg);
        if (text) fputs(text, stdout);
        else code = cli_ctx_error(ctx, "resolving the config");
        tfl_config_free(cfg);
    }
    tfl_ctx_free(ctx);
    return code;
}

/* ---- eval and predict: the trained model of the run directory ---------------------------------- */

/* Builds the run and restores the newest checkpoint's weights into the model. */
static int restore_trained(run *r, const cli_args *a)
{
    int code = build(r, a);
    if (code != CLI_OK) return code;
    char dir[4096], cdir[4200], path[4400];
    cli_run_dir(r->cfg, a, dir, sizeof dir);
    ckpt_dir(r->cfg, dir, cdir, sizeof cdir);
    int64_t step = -1;
    if (a->checkpoint) { /* the one asked for, or an error: never another one */
        snprintf(path, sizeof path, "%s", a->checkpoint);
    } else if (tfl_ckpt_latest(r->ctx, cdir, NULL, path, sizeof path, &step) != TFL_OK) {
        cli_error("no usable checkpoint in '%s': train first ('tapeflow train %s')", cdir,
                  a->config);
        return CLI_RUNTIME;
    }
    if (tfl_model_restore_weights(r->model, path, true) != TFL_OK)
        return cli_ctx_error(r->ctx, path);
    /* which checkpoint: on stdout for eval, on stderr for predict (its CSV may be stdout) */
    FILE *say = a->input ? stderr : stdout;
    if (!cli_dist_writer()) return CLI_OK;
    fprintf(say, "%scheckpoint %s", a->input ? "tapeflow: " : "", path);
    if (step >= 0) fprintf(say, " (step %lld)", (long long)step);
    fputc('\n', say);
    return CLI_OK;
}

int cli_eval(int argc, char **argv)
{
    cli_args a;
    int code = cli_parse("eval", argc, argv, 2, CLI_OPT_SET | CLI_OPT_RUN_DIR | CLI_OPT_CKPT, &a);
    if (code != CLI_OK || (code = cli_dist_start()) != CLI_OK) return code;
    run r = {0};
    if ((code = restore_trained(&r, &a)) == CLI_OK) {
        tfl_dataset *data = r.data.test         ? r.data.test
                            : r.data.validation ? r.data.validation
                                                : r.data.train;
        const char *which = r.data.test ? "test" : r.data.validation ? "validation" : "train";
        double loss = NAN, acc = NAN;
        char buf[64];
        int64_t bs = strtoll(cfg_get(r.cfg, "training.batch_size", buf, sizeof buf), NULL, 10);
        /* under mpirun every rank evaluates its shard of every batch, and rank 0 prints the
         * figures of the whole data (the sums reduced across the ranks) */
        const tfl_replicas *rep = cli_dist_replicas(r.ctx);
        if ((cli_dist_size() > 1 && !rep) ||
            tfl_model_evaluate_replicated(r.model, data, bs, rep, &loss, &acc) != TFL_OK) {
            code = cli_ctx_error(r.ctx, "evaluating");
        } else if (cli_dist_writer()) {
            printf("%s_loss %.4f", which, loss);
            if (!isnan(acc)) printf(" - %s_accuracy %.4f", which, acc);
            printf(" - %lld examples", (long long)tfl_dataset_size(data));
            if (cli_dist_size() > 1) printf(" on %d ranks", cli_dist_size());
            printf("\n");
        }
    }
    run_free(&r);
    return code;
}

/* Writes the model's outputs as CSV: class and probabilities, or the values. */
static int write_predictions(run *r, tfl_tensor *out, FILE *f)
{
    char loss[64];
    cfg_get(r->cfg, "loss", loss, sizeof loss);
    bool softmax = strstr(loss, "categorical") != NULL, sigmoid = strstr(loss, "binary") != NULL;
    int64_t n = tfl_tensor_dim(out, 0), k = n > 0 ? tfl_tensor_numel(out) / n : 0;
    tfl_tensor *p = softmax   ? tfl_softmax(r->ctx, out, -1)
                    : sigmoid ? tfl_sigmoid(r->ctx, out)
                              : out;
    p = p ? tfl_cast(r->ctx, p, TFL_DTYPE_FLOAT64) : NULL;
    double *v = p ? malloc(sizeof(double) * (size_t)(n * k + 1)) : NULL;
    if (!v || tfl_tensor_to_host(p, v, sizeof(double) * (size_t)(n * k)) != TFL_OK) {
        free(v);
        return cli_ctx_error(r->ctx, "predicting");
    }
    if (softmax || sigmoid) fprintf(f, "class");
    for (int64_t j = 0; j < k; j++)
        fprintf(f, "%s%s%lld", softmax || sigmoid || j ? "," : "", softmax || sigmoid ? "p" : "y",
                (long long)j);
    fputc('\n', f);
    for (int64_t i = 0; i < n; i++) {
        const double *row = v + i * k;
        if (softmax || sigmoid) {
            int64_t best = 0;
            for (int64_t j = 1; j < k; j++)
                if (row[j] > row[best]) best = j;
            fprintf(f, "%lld", (long long)(sigmoid && k == 1 ? row[0] > 0.5 : best));
        }
        for (int64_t j = 0; j < k; j++)
            fprintf(f, "%s%.6g", softmax || sigmoid || j ? "," : "", row[j]);
        fputc('\n', f);
    }
    free(v);
    return CLI_OK;
}

int cli_predict(int argc, char **argv)
{
    cli_args a;
    int code = cli_parse("predict", argc, argv, 2,
                         CLI_OPT_SET | CLI_OPT_RUN_DIR | CLI_OPT_IO | CLI_OPT_CKPT, &a);
    if (code != CLI_OK || (code = cli_dist_start()) != CLI_OK) return code;
    /* under mpirun rank 0 alone predicts and writes (one output, in the input's order); the
     * other ranks have nothing to do */
    if (!cli_dist_writer()) return CLI_OK;
    run r = {0};
    if ((code = restore_trained(&r, &a)) == CLI_OK) {
        tfl_dataset *ds = tfl_config_load_examples(r.cfg, &r.data, a.input);
        double loss = NAN, acc = NAN;
        if (ds && tfl_dataset_has_labels(ds)) { /* the training layout: scored, not an input */
            if (tfl_model_evaluate(r.model, ds, 256, &loss, &acc) != TFL_OK) {
                tfl_dataset_free(ds);
                ds = NULL;
            } else {
                fprintf(stderr, "tapeflow: %s has the training data's label column: not an "
                        "input; on its labels loss %.4f", a.input, loss);
                if (!isnan(acc)) fprintf(stderr, ", accuracy %.4f", acc);
                fprintf(stderr, " (%lld examples)\n", (long long)tfl_dataset_size(ds));
            }
        }
        tfl_frame_push(r.ctx); /* the outputs and what is made of them go with the frame */
        tfl_tensor *out = ds ? tfl_model_predict(r.model, ds, 256) : NULL;
        if (!out) {
            code = cli_ctx_error(r.ctx, a.input);
        } else {
            FILE *f = a.output ? fopen(a.output, "w") : stdout;
            if (!f) {
                cli_error("cannot write '%s': %s", a.output, strerror(errno));
                code = CLI_RUNTIME;
            } else {
                code = write_predictions(&r, out, f);
                if (a.output && fclose(f) != 0 && code == CLI_OK) {
                    cli_error("cannot write '%s': %s", a.output, strerror(errno));
                    code = CLI_RUNTIME;
                }
            }
        }
        tfl_frame_pop(r.ctx);
        tfl_dataset_free(ds);
    }
    run_free(&r);
    return code;
}
