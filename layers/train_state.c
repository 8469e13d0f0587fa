/*
 * layers/train_state.c: training checkpoints (<tapeflow/train_state.h>): the model's and the
 * optimizer's variables plus the run's state (RNG, Dropout counters, data position, the
 * partial epoch, early stopping, history) in one safetensors file; the step-checkpoint
 * callback; weights-only saves. Other modules are reached through their public API only.
 */
#include "layers_internal.h"

#include <tapeflow/train_state.h>

#include <stdio.h>

#define PFX "_tapeflow/"
#define HIST_COLS 9

static int64_t bits_of(double v)
{
    int64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static double double_of(int64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* The model's variables, then its optimizer's (slots made first when `build`), in a new
 * array (*out, freed by the caller); the count, or -1 with the error kept. */
static int64_t all_vars(tfl_model *m, bool build, tfl_tensor ***out)
{
    tfl_ctx *ctx = m->ctx;
    *out = NULL;
    int nm = tfl_model_variables(m, TFL_VARS_ALL, NULL, 0);
    TFL_CHECK_RET(ctx, nm > 0, -1, TFL_FAILED_PRECONDITION,
                  "training checkpoint: %s has no "
                  "variables: build it first (tfl_model_build)",
                  m->name);
    int nt = tfl_model_variables(m, TFL_VARS_TRAINABLE, NULL, 0);
    tfl_tensor **v = tfl__calloc(ctx, sizeof *v * (size_t)(nm + nt + 1));
    if (!v) return -1;
    tfl_model_variables(m, TFL_VARS_TRAINABLE, v, nt);
    if (build && m->optimizer && tfl_optimizer_build(m->optimizer, nt, v) != TFL_OK) {
        tfl__host_free(ctx, v);
        return -1;
    }
    tfl_model_variables(m, TFL_VARS_ALL, v, nm);
    int64_t no = m->optimizer ? tfl_optimizer_variables(m->optimizer, NULL, 0) : 0;
    tfl_tensor **all = tfl__calloc(ctx, sizeof *all * (size_t)(nm + no + 1));
    if (!all) {
        tfl__host_free(ctx, v);
        return -1;
    }
    memcpy(all, v, sizeof *v * (size_t)nm);
    tfl__host_free(ctx, v);
    if (no) tfl_optimizer_variables(m->optimizer, all + nm, no);
    *out = all;
    return nm + no;
}

static int n_dropout(const tfl_model *m)
{
    int n = 0;
    for (int i = 0; i < m->n_layers; i++)
        n += m->layers[i]->spec.kind == TFL_LAYER_DROPOUT;
    return n;
}

/* ---- save -------------------------------------------------------------------------------------
 */

/* The "tapeflow.weights" list: the model's variable names, one a line. */
static char *weights_list(tfl_model *m, tfl_tensor **vars, int n)
{
    size_t len = 1;
    for (int i = 0; i < n; i++)
        len += strlen(tfl_variable_name(vars[i])) + 1;
    char *s = tfl__host_alloc(m->ctx, len, 16);
    if (!s) return NULL;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(tfl_variable_name(vars[i]));
        memcpy(s + at, tfl_variable_name(vars[i]), l);
        at += l;
        if (i + 1 < n) s[at++] = '\n';
    }
    s[at] = 0;
    return s;
}

static tfl_tensor *i64_tensor(tfl_ctx *ctx, int rank, const int64_t *shape, const int64_t *v)
{
    return tfl_tensor_new(ctx, TFL_DTYPE_INT64, rank, shape, v);
}

static tfl_status save_in_frame(tfl_model *m, const char *path, const tfl_train_state *s,
                                const tfl_ckpt_save_opts *opts, tfl_tensor **vars, int64_t nv,
                                const tfl_tensor **t, const char **names, char (*dnames)[160])
{
    tfl_ctx *ctx = m->ctx;
    int64_t k = nv;
    for (int64_t i = 0; i < nv; i++)
        t[i] = vars[i], names[i] = NULL;
    uint64_t seed = 0, calls = 0;
    tfl_ctx_rng_state(ctx, &seed, &calls);
    names[k] = PFX "rng";
    t[k++] = i64_tensor(ctx, 1, (int64_t[]){2}, (int64_t[]){(int64_t)seed, (int64_t)calls});
    names[k] = PFX "position";
    t[k++] = i64_tensor(ctx, 1, (int64_t[]){4},
                        (int64_t[]){s->epoch, s->batch, s->step, (int64_t)s->shuffle_seed});
    names[k] = PFX "progress";
    t[k++] = i64_tensor(ctx, 1, (int64_t[]){4},
                        (int64_t[]){bits_of(s->progress.loss_sum), bits_of(s->progress.correct),
                                    s->progress.samples, s->progress.skipped_steps});
    if (s->early_stopping) {
        const tfl_early_stopping *es = s->early_stopping;
        names[k] = PFX "early_stopping";
        t[k++] =
            i64_tensor(ctx, 1, (int64_t[]){4},
                       (int64_t[]){bits_of(es->best), es->best_epoch, es->wait, es->stopped_epoch});
    }
    int64_t *hist = NULL;
    if (s->history && s->history->count > 0) {
        const tfl_history *h = s->history;
        int n = h->count < h->cap ? h->count : h->cap;
        TFL_CHECK(ctx, n == h->count && h->logs, TFL_INVALID_ARGUMENT,
                  "training checkpoint: the "
                  "history holds %d of its %d epochs: give it room for all",
                  n, h->count);
        hist = tfl__host_alloc(ctx, sizeof *hist * (size_t)n * HIST_COLS, 16);
        TFL_CHECK(ctx, hist, TFL_RESOURCE_EXHAUSTED, "training checkpoint: out of memory");
        for (int e = 0; e < n; e++) {
            const tfl_epoch_logs *l = &h->logs[e];
            int64_t row[HIST_COLS] = {l->epoch,
                                      l->epochs,
                                      bits_of(l->loss),
                                      bits_of(l->accuracy),
                                      bits_of(l->val_loss),
                                      bits_of(l->val_accuracy),
                                      bits_of(l->seconds),
                                      l->samples,
                                      l->skipped_steps};
            memcpy(hist + e * HIST_COLS, row, sizeof row);
        }
        names[k] = PFX "history";
        t[k++] = i64_tensor(ctx, 2, (int64_t[]){n, HIST_COLS}, hist);
        tfl__host_free(ctx, hist);
    }
    int d = 0;
    for (int i = 0; i < m->n_layers; i++) {
        tfl_layer *l = m->layers[i];
        if (l->spec.kind != TFL_LAYER_DROPOUT) continue;
        snprintf(dnames[d], sizeof dnames[d], PFX "dropout/%s", l->name);
        names[k] = dnames[d++];
        int64_t c = (int64_t)tfl_layer_rng_calls(l);
        t[k++] = i64_tensor(ctx, 0, NULL, &c);
    }
    for (int64_t i = nv; i < k; i++)
        if (!t[i]) return tfl_ctx_status(ctx);
    /* metadata: the caller's, then the weights list, step and epoch */
    int nu = opts ? opts->n_metadata : 0;
    TFL_CHECK(ctx, nu >= 0 && (!nu || (opts->metadata_keys && opts->metadata_values)),
              TFL_INVALID_ARGUMENT, "training checkpoint: bad metadata count %d", nu);
    const char **keys = tfl__calloc(ctx, sizeof *keys * (size_t)(nu + 3));
    const char **vals = keys ? tfl__calloc(ctx, sizeof *vals * (size_t)(nu + 3)) : NULL;
    int nmodel = tfl_model_variables(m, TFL_VARS_ALL, NULL, 0);
    char *list = vals ? weights_list(m, vars, nmodel) : NULL;
    tfl_status st = list ? TFL_OK : tfl_ctx_status(ctx);
    if (st == TFL_OK) {
        char step[32], epoch[32];
        snprintf(step, sizeof step, "%lld", (long long)s->step);
        snprintf(epoch, sizeof epoch, "%d", s->epoch);
        for (int i = 0; i < nu; i++)
            keys[i] = opts->metadata_keys[i], vals[i] = opts->metadata_values[i];
        keys[nu] = "tapeflow.weights", vals[nu] = list;
        keys[nu + 1] = "tapeflow.step", vals[nu + 1] = step;
        keys[nu + 2] = "tapeflow.epoch", vals[nu + 2] = epoch;
        tfl_ckpt_save_opts o = {.flags = opts ? opts->flags : 0,
                                .n_metadata = nu + 3,
                                .metadata_keys = keys,
                                .metadata_values = vals};
        st = tfl_ckpt_save(ctx, path, k, names, t, &o);
    }
    tfl__host_free(ctx, list);
    tfl__host_free(ctx, keys);
    tfl__host_free(ctx, vals);
    return st;
}

tfl_status tfl_train_state_save(tfl_model *m, const char *path, const tfl_train_state *s,
                                const tfl_ckpt_save_opts *opts)
{
    if (!m) return TFL_INVALID_ARGUMENT;
    if (!tfl__model_alive(m, "tfl_train_state_save")) return TFL_MISUSE;
    tfl_ctx *ctx = m->ctx;
    TFL_CHECK(ctx, s, TFL_INVALID_ARGUMENT, "tfl_train_state_save: state is NULL");
    tfl_tensor **vars;
    int64_t nv = all_vars(m, true, &vars);
    if (nv < 0) return tfl_ctx_status(ctx);
    int64_t cap = nv + 6 + n_dropout(m);
    const tfl_tensor **t = tfl__calloc(ctx, sizeof *t * (size_t)cap);
    const char **names = t ? tfl__calloc(ctx, sizeof *names * (size_t)cap) : NULL;
    char(*dnames)[160] = names ? tfl__calloc(ctx, 160 * (size_t)(n_dropout(m) + 1)) : NULL;
    tfl_status st = dnames ? tfl_frame_push(ctx) : tfl_ctx_status(ctx);
    if (st == TFL_OK) {
        st = save_in_frame(m, path, s, opts, vars, nv, t, names, dnames);
        tfl_frame_pop(ctx);
    }
    tfl__host_free(ctx, vars);
    tfl__host_free(ctx, (void *)t);
    tfl__host_free(ctx, (void *)names);
    tfl__host_free(ctx, dnames);
    return st;
}

/* ---- restore ----------------------------------------------------------------------------------
 */

/* Reads int64 tensor `name` of the given rank and shape (CRC checked). false: absent, of
 * another dtype or shape, or unreadable (that error kept). */
static bool read_i64(tfl_ckpt *ck, const char *name, int rank, const int64_t *shape, int64_t *out)
{
    int64_t i = tfl_ckpt_find(ck, name);
    if (i < 0) return false;
    tfl_ckpt_tensor_info info;
    tfl_ckpt_tensor_info_at(ck, i, &info);
    bool ok = info.dtype == TFL_DTYPE_INT64 && info.rank == rank;
    int64_t n = 1;
    for (int d = 0; ok && d < rank; d++)
        ok = info.shape[d] == shape[d], n *= shape[d];
    return ok && tfl_ckpt_read(ck, i, out, (size_t)n * sizeof *out) == TFL_OK;
}

typedef struct restored {
    int64_t rng[2], pos[4], prog[4], es[4];
    bool has_es;
    int64_t *hist;
    int64_t hist_n;
    int64_t *drop; /* per layer (Dropout only) */
} restored;

static tfl_status read_state(tfl_model *m, tfl_ckpt *ck, restored *r)
{
    tfl_ctx *ctx = m->ctx;
    const char *path = tfl_ckpt_path(ck);
#define NEED(name, rank, shape, out, desc)                                                         \
    do {                                                                                           \
        if (!read_i64(ck, name, rank, shape, out)) {                                               \
            if (tfl_ctx_status(ctx) != TFL_OK) return tfl_ctx_status(ctx);                         \
            return tfl__set_error(ctx, TFL_DATA_LOSS,                                              \
                                  "training checkpoint '%s': '%s' is "                             \
                                  "missing or not int64 of shape %s",                              \
                                  path, name, desc);                                               \
        }                                                                                          \
    } while (0)
    NEED(PFX "rng", 1, ((int64_t[]){2}), r->rng, "(2,)");
    NEED(PFX "position", 1, ((int64_t[]){4}), r->pos, "(4,)");
    NEED(PFX "progress", 1, ((int64_t[]){4}), r->prog, "(4,)");
    TFL_CHECK(ctx,
              r->rng[0] != 0 && r->pos[0] >= 0 && r->pos[0] <= INT32_MAX && r->pos[1] >= 0 &&
                  r->pos[2] >= 0 && r->prog[2] >= 0 && r->prog[3] >= 0,
              TFL_DATA_LOSS,
              "training checkpoint '%s': the rng, position or progress values are out of range",
              path);
    r->has_es = tfl_ckpt_find(ck, PFX "early_stopping") >= 0;
    if (r->has_es) NEED(PFX "early_stopping", 1, ((int64_t[]){4}), r->es, "(4,)");
    int64_t hi = tfl_ckpt_find(ck, PFX "history");
    if (hi >= 0) {
        tfl_ckpt_tensor_info info;
        tfl_ckpt_tensor_info_at(ck, hi, &info);
        TFL_CHECK(ctx,
                  info.dtype == TFL_DTYPE_INT64 && info.rank == 2 && info.shape[1] == HIST_COLS &&
                      info.shape[0] <= INT32_MAX,
                  TFL_DATA_LOSS, "training checkpoint '%s': the history is not int64 (epochs, %d)",
                  path, HIST_COLS);
        r->hist_n = info.shape[0];
        r->hist = tfl__host_alloc(ctx, (size_t)info.bytes + 8, 16);
        TFL_CHECK(ctx, r->hist, TFL_RESOURCE_EXHAUSTED, "training checkpoint: out of memory");
        TFL_TRY(tfl_ckpt_read(ck, hi, r->hist, (size_t)info.bytes));
    }
    int d = 0;
    for (int i = 0; i < m->n_layers; i++) {
        tfl_layer *l = m->layers[i];
        if (l->spec.kind != TFL_LAYER_DROPOUT) continue;
        char name[160];
        snprintf(name, sizeof name, PFX "dropout/%s", l->name);
        NEED(name, 0, ((int64_t[]){1}), &r->drop[d], "()");
        d++;
    }
#undef NEED
    /* every "_tapeflow/dropout/..." names a Dropout layer of the model */
    for (int64_t i = 0; i < tfl_ckpt_num_tensors(ck); i++) {
        tfl_ckpt_tensor_info info;
        tfl_ckpt_tensor_info_at(ck, i, &info);
        if (strncmp(info.name, PFX "dropout/", strlen(PFX "dropout/")) != 0) continue;
        const char *ln = info.name + strlen(PFX "dropout/");
        bool found = false;
        for (int k = 0; k < m->n_layers && !found; k++)
            found = m->layers[k]->spec.kind == TFL_LAYER_DROPOUT && !strcmp(m->layers[k]->name, ln);
        TFL_CHECK(ctx, found, TFL_INVALID_ARGUMENT,
                  "training checkpoint '%s': '%s' names no "
                  "Dropout layer of %s",
                  path, info.name, m->name);
    }
    return TFL_OK;
}

static void apply_state(tfl_model *m, const restored *r, tfl_train_state *s)
{
    tfl_ctx_set_rng_state(m->ctx, (uint64_t)r->rng[0], (uint64_t)r->rng[1]);
    int d = 0;
    for (int i = 0; i < m->n_layers; i++)
        if (m->layers[i]->spec.kind == TFL_LAYER_DROPOUT)
            tfl_layer_set_rng_calls(m->layers[i], (uint64_t)r->drop[d++]);
    s->epoch = (int)r->pos[0];
    s->batch = r->pos[1];
    s->step = r->pos[2];
    s->shuffle_seed = (uint64_t)r->pos[3];
    s->progress =
        (tfl_epoch_progress){double_of(r->prog[0]), double_of(r->prog[1]), r->prog[2], r->prog[3]};
    if (s->early_stopping && r->has_es) {
        tfl_early_stopping *es = s->early_stopping;
        es->best = double_of(r->es[0]);
        es->best_epoch = (int)r->es[1];
        es->wait = (int)r->es[2];
        es->stopped_epoch = (int)r->es[3];
        es->resume = true;
    }
    if (s->history) {
        tfl_history *h = s->history;
        for (int64_t e = 0; e < r->hist_n && e < h->cap && h->logs; e++) {
            const int64_t *row = r->hist + e * HIST_COLS;
            h->logs[e] = (tfl_epoch_logs){(int)row[0],
                                          (int)row[1],
                                          double_of(row[2]),
                                          double_of(row[3]),
                                          double_of(row[4]),
                                          double_of(row[5]),
                                          double_of(row[6]),
                                          row[7],
                                          row[8]};
        }
        h->count = (int)r->hist_n;
    }
}

/*
 * Dynamic loss scaling's state (tfl_optimizer_opts.loss_scale) across a change of precision
 * policy: a checkpoint without it (trained without loss scaling) leaves the scaler at its
 * start, and one with it restored into an optimizer without loss scaling has it ignored. The
 * first drops the scaler's variables from vars (returns the new count); the second fills
 * ignore with the tensor names (names[] holds them).
 */
static int64_t scaler_state(tfl_model *m, tfl_ckpt *ck, tfl_tensor **vars, int64_t nv,
                            char names[3][192], const char *ignore[4])
{
    static const char *const suffix[3] = {"loss_scale", "loss_scale_steps", "skipped_steps"};
    const char *opt = tfl_optimizer_name(m->optimizer);
    bool scales = tfl_optimizer_options(m->optimizer)->loss_scale > 0;
    int k = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(names[i], sizeof names[i], "%s/%s", opt, suffix[i]);
        bool in_file = tfl_ckpt_find(ck, names[i]) >= 0;
        if (!scales && in_file) ignore[k++] = names[i];
        if (!scales || in_file) continue;
        for (int64_t j = 0; j < nv; j++) /* not in the file: keeps its start */
            if (!strcmp(tfl_variable_name(vars[j]), names[i])) {
                memmove(vars + j, vars + j + 1, sizeof *vars * (size_t)(nv - j - 1));
                nv--;
                break;
            }
    }
    if (k || (scales && tfl_ckpt_find(ck, names[0]) < 0))
        tfl__log(m->ctx, TFL_LOG_INFO, "%s: %s", tfl_ckpt_path(ck),
                 k ? "its loss scaling state is left out: the optimizer does not scale the loss"
                   : "no loss scaling state: the optimizer's scaler starts afresh");
    return nv;
}

tfl_status tfl_train_state_restore(tfl_model *m, const char *path, tfl_train_state *s)
{
    if (!m) return TFL_INVALID_ARGUMENT;
    if (!tfl__model_alive(m, "tfl_train_state_restore")) return TFL_MISUSE;
    tfl_ctx *ctx = m->ctx;
    TFL_CHECK(ctx, s, TFL_INVALID_ARGUMENT, "tfl_train_state_restore: state is NULL");
    TFL_CHECK(ctx, m->optimizer, TFL_FAILED_PRECONDITION,
              "tfl_train_state_restore: %s has no "
              "optimizer: compile it as it was when saved",
              m->name);
    tfl_ckpt *ck = tfl_ckpt_open(ctx, path);
    if (!ck) return tfl_ctx_status(ctx);
    restored r = {0};
    r.drop = tfl__calloc(ctx, sizeof *r.drop * (size_t)(n_dropout(m) + 1));
    tfl_status st = r.drop ? read_state(m, ck, &r) : tfl_ctx_status(ctx);
    tfl_tensor **vars = NULL;
    int64_t nv = st == TFL_OK ? all_vars(m, true, &vars) : 0;
    if (nv < 0) st = tfl_ctx_status(ctx);
    char scaler[3][192];
    const char *ignore[4] = {NULL};
    if (st == TFL_OK) nv = scaler_state(m, ck, vars, nv, scaler, ignore);
    if (st == TFL_OK)
        st = tfl_ckpt_restore_from(
            ck, nv, vars, &(tfl_ckpt_restore_opts){.ignore_prefix = PFX, .ignore_names = ignore},
            NULL);
    if (st == TFL_OK) apply_state(m, &r, s);
    tfl__host_free(ctx, vars);
    tfl__host_free(ctx, r.hist);
    tfl__host_free(ctx, r.drop);
    tfl_ckpt_close(ck);
    return st;
}

tfl_fit_opts tfl_fit_opts_resume(tfl_fit_opts o, const tfl_train_state *s)
{
    if (!s) return o;
    o.initial_epoch = s->epoch;
    o.initial_batch = s->batch;
    o.initial_step = s->step;
    o.initial_progress = s->progress;
    o.seed = s->shuffle_seed;
    o.append_history = s->history != NULL;
    return o;
}

/* ---- the step-checkpoint callback -------------------------------------------------------------
 */

static tfl_status sc_begin(tfl_model *m, void *user)
{
    tfl_step_checkpoint *c = user;
    TFL_CHECK_RET(m->ctx, c && c->manager && c->every_steps >= 0, TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "step checkpoint: needs a manager and every_steps >= 0");
    c->saved = 0;
    c->last_step = -1;
    c->epoch_end_step = -1;
    return TFL_OK;
}

static tfl_status sc_save(tfl_model *m, tfl_step_checkpoint *c, const tfl_train_state *s)
{
    char path[4096];
    int len = tfl_ckpt_manager_path(c->manager, s->step, path, sizeof path);
    TFL_CHECK_RET(m->ctx, len > 0 && len < (int)sizeof path, TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "step checkpoint: no path for step %lld",
                  (long long)s->step);
    tfl_status st = tfl_train_state_save(m, path, s, c->save_opts);
    if (st == TFL_OK) st = tfl_ckpt_manager_commit(c->manager, s->step);
    if (st != TFL_OK) return st;
    c->saved++;
    c->last_step = s->step;
    return TFL_OK;
}

static tfl_status sc_step(tfl_model *m, const tfl_step_logs *logs, void *user, bool *stop)
{
    tfl_step_checkpoint *c = user;
    bool req = c->request && *c->request;
    bool due = c->every_steps > 0 && logs->step % c->every_steps == 0;
    if (!req && !due) return TFL_OK;
    tfl_step_logs read; /* the exact sums of the step saved, read if fit left them unread */
    tfl_status rs = tfl_step_logs_read(m, logs, &read);
    if (rs != TFL_OK) return rs;
    const tfl_step_logs *lg = &read;
    if (!req && lg->batch + 1 == lg->batches) {
        /* a periodic save at an epoch's last step waits for the epoch's end: the state saved
         * is then "epoch done" (the next epoch, batch 0), and a resume does not run that
         * epoch's end (its metrics line, its event points) a second time */
        c->epoch_end_step = lg->step;
        return TFL_OK;
    }
    tfl_train_state s = {lg->epoch,    lg->batch + 1,     lg->step,  c->shuffle_seed,
                         lg->progress, c->early_stopping, c->history};
    tfl_status st = sc_save(m, c, &s);
    if (st != TFL_OK) return st;
    if (req) {
        *c->request = 0;
        if (c->stop_on_request) *stop = true;
    }
    return TFL_OK;
}

static tfl_status sc_epoch_end(tfl_model *m, const tfl_epoch_logs *logs, void *user, bool *stop)
{
    (void)stop;
    tfl_step_checkpoint *c = user;
    if (c->epoch_end_step < 0) return TFL_OK;
    tfl_train_state s = {.epoch = logs->epoch + 1, .step = c->epoch_end_step,
                         .shuffle_seed = c->shuffle_seed, .early_stopping = c->early_stopping,
                         .history = c->history};
    c->epoch_end_step = -1;
    return sc_save(m, c, &s);
}

tfl_callback tfl_step_checkpoint_callback(tfl_step_checkpoint *c)
{
    return (tfl_callback){.on_train_begin = sc_begin, .on_step_end = sc_step,
                          .on_epoch_end = sc_epoch_end, .user = c};
}

/* ---- weights only -----------------------------------------------------------------------------
 */

tfl_status tfl_model_save_weights(tfl_model *m, const char *path, const tfl_ckpt_save_opts *opts)
{
    if (!m) return TFL_INVALID_ARGUMENT;
    if (!tfl__model_alive(m, "tfl_model_save_weights")) return TFL_MISUSE;
    int n = tfl_model_variables(m, TFL_VARS_ALL, NULL, 0);
    TFL_CHECK(m->ctx, n > 0, TFL_FAILED_PRECONDITION,
              "tfl_model_save_weights: %s has no "
              "variables: build it first",
              m->name);
    tfl_tensor **v = tfl__calloc(m->ctx, sizeof *v * (size_t)n);
    if (!v) return tfl_ctx_status(m->ctx);
    tfl_model_variables(m, TFL_VARS_ALL, v, n);
    tfl_status st = tfl_ckpt_save(m->ctx, path, n, NULL, (const tfl_tensor *const *)v, opts);
    tfl__host_free(m->ctx, v);
    return st;
}

tfl_status tfl_model_restore_weights(tfl_model *m, const char *path, bool allow_unexpected)
{
    if (!m) return TFL_INVALID_ARGUMENT;
    if (!tfl__model_alive(m, "tfl_model_restore_weights")) return TFL_MISUSE;
    int n = tfl_model_variables(m, TFL_VARS_ALL, NULL, 0);
    TFL_CHECK(m->ctx, n > 0, TFL_FAILED_PRECONDITION,
              "tfl_model_restore_weights: %s has no "
              "variables: build it first",
              m->name);
    tfl_tensor **v = tfl__calloc(m->ctx, sizeof *v * (size_t)n);
    if (!v) return tfl_ctx_status(m->ctx);
    tfl_model_variables(m, TFL_VARS_ALL, v, n);
    tfl_status st = tfl_ckpt_restore(
        m->ctx, path, n, v, &(tfl_ckpt_restore_opts){.allow_unexpected = allow_unexpected}, NULL);
    tfl__host_free(m->ctx, v);
    return st;
}

tfl_status tfl_checkpoint_hook_save_weights(tfl_model *m, const char *path, void *user)
{
    return tfl_model_save_weights(m, path, user);
}
