/*
 * layers/fit.c: the training loop (tfl_model_fit), evaluate and predict, the metrics of a
 * batch, and the progress output (a redrawn bar on a terminal, a line per epoch otherwise).
 */
#include "dataset_internal.h"
#include "layers_internal.h"

#include <math.h>
#include <time.h>
#include <unistd.h>

/* The batch size a caller's 0 stands for. */
static int64_t batch_or_default(int64_t batch_size)
{
    return batch_size ? batch_size : TFL_DEFAULT_BATCH_SIZE;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- one batch ---------------------------------------------------------------------------------- */

/* Examples of the batch the model got right (see TFL_METRIC_ACCURACY), as a float64 scalar
 * on the batch's device (frame-owned); NULL on error. */
static tfl_tensor *correct_tensor(tfl_model *m, const tfl_tensor *pred, const tfl_tensor *y)
{
    tfl_ctx *ctx = m->ctx;
    tfl_tensor *eq;
    if (m->loss == TFL_LOSS_BINARY_CROSSENTROPY) {
        tfl_tensor *zero = tfl_zeros(ctx, tfl_tensor_dtype(pred), 0, NULL);
        tfl_tensor *yf = tfl_cast(ctx, y, tfl_tensor_dtype(pred));
        tfl_tensor *half = tfl_fill(ctx, tfl_tensor_dtype(pred), 0, NULL, 0.5);
        tfl_tensor *p = tfl_greater(ctx, pred, zero), *t = tfl_greater(ctx, yf, half);
        if (t && tfl_tensor_rank(t) < tfl_tensor_rank(p))
            t = tfl_reshape(ctx, t, tfl_tensor_rank(p), tfl_tensor_shape(p));
        eq = tfl_equal(ctx, p, t);
    } else {
        tfl_tensor *guess = tfl_argmax(ctx, pred, -1);
        tfl_tensor *truth = tfl_dtype_is_integer(tfl_tensor_dtype(y)) &&
                                    tfl_tensor_rank(y) == tfl_tensor_rank(pred) - 1
                                ? tfl_cast(ctx, y, TFL_DTYPE_INT64)
                                : tfl_argmax(ctx, y, -1);
        eq = tfl_equal(ctx, guess, truth);
    }
    return tfl_reduce_sum(ctx, tfl_cast(ctx, eq, TFL_DTYPE_FLOAT64), 0, NULL, false);
}

/* Per-example losses of a sequence model are per position ((b, s) for labels (b, s)): the
 * positions one example holds, by which its loss sum and correct count are divided so that
 * the epoch's figures stay means over positions (1 for one label per example). */
static double positions_per_example(const tfl_tensor *per)
{
    int64_t b = tfl_tensor_dim(per, 0);
    return b > 0 ? (double)tfl_tensor_numel(per) / (double)b : 1.0;
}

/* t (a float scalar) / positions, or t itself for one position per example */
static tfl_tensor *per_example(tfl_ctx *ctx, tfl_tensor *t, double positions)
{
    if (!t || positions == 1.0) return t;
    tfl_tensor *k = tfl_tensor_dtype(t) == TFL_DTYPE_FLOAT64
                        ? tfl_scalar_f64(ctx, 1.0 / positions)
                        : tfl_scalar_f32(ctx, (float)(1.0 / positions));
    return k ? tfl_mul(ctx, t, k) : NULL;
}

/* correct_tensor read on the host; -1 on error. */
static double count_correct(tfl_model *m, const tfl_tensor *pred, const tfl_tensor *y)
{
    tfl_tensor *n = correct_tensor(m, pred, y);
    double v;
    return n && tfl_tensor_get(n, 0, &v) == TFL_OK ? v : -1;
}

/* The device a batch goes to: the device scope's when one is open (as tfl_dataset_next),
 * else the model's variables' once it has some (a GPU, by placement), else CPU:0. */
static tfl__device *batch_device(tfl_model *m)
{
    tfl_ctx *ctx = m->ctx;
    tfl_tensor *v = NULL;
    if (tfl__ctx_device_scopes(ctx) == 0 && tfl_model_variables(m, TFL_VARS_ALL, &v, 1) >= 1 && v)
        return tfl__device_of(v);
    return tfl__current_device(ctx);
}

/* The trainable variables into m->train_vars (they exist once the model was called). */
static bool gather_vars(tfl_model *m)
{
    int n = tfl_model_variables(m, TFL_VARS_TRAINABLE, NULL, 0);
    if (n > m->cap_train_vars) {
        tfl_tensor **v = tfl__calloc(m->ctx, sizeof(tfl_tensor *) * (size_t)(n + 1));
        tfl_tensor **g = v ? tfl__calloc(m->ctx, sizeof(tfl_tensor *) * (size_t)(n + 1)) : NULL;
        if (!g) {
            tfl__host_free(m->ctx, v);
            return false;
        }
        tfl__host_free(m->ctx, m->train_vars);
        tfl__host_free(m->ctx, m->grads);
        m->train_vars = v;
        m->grads = g;
        m->cap_train_vars = n;
    }
    m->n_train_vars = tfl_model_variables(m, TFL_VARS_TRAINABLE, m->train_vars, n);
    return true;
}

/* The end of a step, once m->grads hold the gradients: the callbacks' on_gradients, then the
 * optimizer's apply unless a hook skipped the step (sl->skipped). */
static tfl_status hooks_and_apply(tfl_model *m, const tfl_fit_opts *o, tfl_step_logs *sl)
{
    tfl_status st = TFL_OK;
    bool skip = false;
    for (int i = 0; i < o->n_callbacks && st == TFL_OK; i++)
        if (o->callbacks[i].on_gradients) {
            st = o->callbacks[i].on_gradients(m, m->n_train_vars, m->train_vars, m->grads, sl,
                                              o->callbacks[i].user, &skip);
            sl->skipped = skip;
        }
    if (st == TFL_OK && !skip)
        st = tfl_optimizer_apply(m->optimizer, m->n_train_vars, m->train_vars, m->grads);
    return st;
}

/* A step on a batch of 0 rows (an empty shard, see tfl_dataset_shard): no forward pass (no
 * statistics of nothing); zero gradients of every trainable variable go through the hooks
 * and the apply as any step's would, so that the replicas' collectives stay matched. Loss 0,
 * weight 0 in the epoch's sums. */
static tfl_status empty_step(tfl_model *m, const tfl_fit_opts *o, const tfl_tensor *x,
                             tfl_step_logs *sl)
{
    tfl_ctx *ctx = m->ctx;
    if (!m->layers[m->n_layers - 1]->built) { /* the first batch is empty: build from its shape */
        int64_t shape[TFL_MAX_RANK];
        int rank = tfl_tensor_rank(x);
        memcpy(shape, tfl_tensor_shape(x), sizeof(int64_t) * (size_t)rank);
        shape[0] = -1;
        tfl_status st = tfl_model_build(m, rank, shape);
        if (st != TFL_OK) return st;
    }
    if (!gather_vars(m)) return tfl_ctx_status(ctx);
    for (int i = 0; i < m->n_train_vars; i++)
        if (!(m->grads[i] = tfl_zeros_like(ctx, m->train_vars[i]))) return tfl_ctx_status(ctx);
    sl->loss = 0;
    return hooks_and_apply(m, o, sl);
}

/* ---- recorded steps (tfl_fit_opts.step_graphs) ------------------------------------------ */

/* What a recorded step depends on besides the values of x and y: a replay needs all of it
 * equal. Compared with memcmp (made zeroed). */
typedef struct step_key {
    tfl__device *dev;
    uint8_t dt[2], rank[2];
    int64_t shape[2][TFL_MAX_RANK];
    int n_vars;
    uint64_t vars;          /* a hash of the trainable variables' ids, in order */
    double loss_scale;      /* the seed of the gradients (dynamic loss scaling) */
    int precision;
    bool deterministic;
} step_key;

typedef struct tfl__step_graph {
    tfl__trace *tr;
    step_key key;           /* tr's */
    step_key last;          /* the previous step's */
    step_key refused;       /* a key whose recording failed: not tried again */
    bool have_last, have_refused;
    int records;            /* recordings made by this fit */
    tfl_tensor **outs;      /* scratch: pred, per, loss, then the gradients */
    int cap_outs;
} tfl__step_graph;

#define MAX_RECORDS 8 /* then steps stay plain: something changes memory every step */

static void key_of(tfl_model *m, const tfl_tensor *x, const tfl_tensor *y, step_key *k)
{
    memset(k, 0, sizeof *k);
    k->dev = tfl__device_of(x);
    const tfl_tensor *t[2] = {x, y};
    for (int i = 0; i < 2; i++) {
        k->dt[i] = (uint8_t)tfl_tensor_dtype(t[i]);
        k->rank[i] = (uint8_t)tfl_tensor_rank(t[i]);
        memcpy(k->shape[i], tfl_tensor_shape(t[i]), sizeof(int64_t) * k->rank[i]);
    }
    k->n_vars = m->n_train_vars;
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < m->n_train_vars; i++)
        h = (h ^ m->train_vars[i]->id) * 1099511628211ull;
    k->vars = h;
    k->loss_scale = tfl_optimizer_loss_scale(m->optimizer);
    k->precision = (int)tfl_ctx_precision(m->ctx);
    k->deterministic = tfl_ctx_deterministic(m->ctx);
}

static bool same_key(const step_key *a, const step_key *b) { return !memcmp(a, b, sizeof *a); }

static void graph_drop(tfl__step_graph *g)
{
    tfl__trace_free(g->tr);
    g->tr = NULL;
}

/* The forward pass, the loss and the gradients into *pred, *per, *loss and m->grads. */
static tfl_status forward_backward(tfl_model *m, const tfl_tensor *x, const tfl_tensor *y,
                                   tfl_tensor **pred, tfl_tensor **per, tfl_tensor **loss)
{
    tfl_ctx *ctx = m->ctx;
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    if (!tape) return tfl_ctx_status(ctx);
    *pred = tfl_model_call(m, x, true);
    *per = *pred ? tfl_loss_per_example(ctx, m->loss, *pred, y) : NULL;
    *loss = *per ? tfl_reduce_mean(ctx, *per, 0, NULL, false) : NULL;
    tfl_tape_end(tape);
    tfl_status st = *loss && gather_vars(m) ? TFL_OK : tfl_ctx_status(ctx);
    if (st == TFL_OK)
        st = tfl_optimizer_gradient(m->optimizer, tape, *loss, m->n_train_vars,
                                    (const tfl_tensor *const *)m->train_vars, m->grads);
    tfl_tape_free(tape);
    return st;
}

static bool outs_room(tfl_model *m, tfl__step_graph *g)
{
    int n = 3 + m->n_train_vars;
    if (n <= g->cap_outs) return true;
    tfl_tensor **o = tfl__calloc(m->ctx, sizeof *o * (size_t)n);
    if (!o) return false;
    tfl__host_free(m->ctx, g->outs);
    g->outs = o;
    g->cap_outs = n;
    return true;
}

/* forward_backward through the recorded step: a replay when one of this key exists (x and y
 * then name the trace's copies of the batch), a recording when the step before had this key
 * (a steady shape, not an epoch's last batch), else plain. sl->replayed tells. */
static tfl_status graph_step(tfl_model *m, tfl__step_graph *g, const tfl_tensor **x,
                             const tfl_tensor **y, tfl_tensor **pred, tfl_tensor **per,
                             tfl_tensor **loss, tfl_step_logs *sl)
{
    tfl_ctx *ctx = m->ctx;
    step_key key;
    if (!gather_vars(m) || !outs_room(m, g)) return tfl_ctx_status(ctx);
    key_of(m, *x, *y, &key);
    if (tfl__dev_host_memory(key.dev)) /* the CPU runs its kernels as they are called */
        return forward_backward(m, *x, *y, pred, per, loss);
    const tfl_tensor *in[2] = {*x, *y};
    tfl_tensor *copies[2];
    bool record = g->have_last && same_key(&key, &g->last) && g->records < MAX_RECORDS &&
                  !(g->have_refused && same_key(&key, &g->refused));
    g->last = key; /* the key of the step before the next */
    g->have_last = true;
    if (g->tr && same_key(&key, &g->key)) {
        bool stale = false;
        tfl_status st = tfl__trace_replay(g->tr, 2, in, copies, g->outs, &stale);
        if (st != TFL_OK) return st;
        if (!stale) {
            *x = copies[0];
            *y = copies[1];
            *pred = g->outs[0];
            *per = g->outs[1];
            *loss = g->outs[2];
            for (int i = 0; i < m->n_train_vars; i++) m->grads[i] = g->outs[3 + i];
            sl->replayed = true;
            return TFL_OK;
        }
        graph_drop(g); /* a variable has new memory: record again */
    }
    if (!record) return forward_backward(m, *x, *y, pred, per, loss);
    graph_drop(g);
    g->records++;
    /* variables that share memory with a snapshot move now, not inside the recorded pass */
    int n_all = tfl_model_variables(m, TFL_VARS_ALL, NULL, 0);
    tfl_tensor **all = tfl__calloc(ctx, sizeof *all * (size_t)(n_all > 0 ? n_all : 1));
    if (!all) return tfl_ctx_status(ctx);
    n_all = tfl_model_variables(m, TFL_VARS_ALL, all, n_all);
    tfl_status own = TFL_OK;
    for (int i = 0; i < n_all && own == TFL_OK; i++) own = tfl__variable_own(all[i]);
    tfl__host_free(ctx, all);
    if (own != TFL_OK) return own;
    tfl_error before = tfl_ctx_error(ctx);
    tfl__trace *tr = tfl__trace_begin(ctx, key.dev, 2, in, copies);
    if (!tr) { /* no room for the input buffers, say: the steps stay plain */
        tfl__log(ctx, TFL_LOG_INFO, "tfl_model_fit: %s: the step is not recorded: %s; steps "
                 "run op by op", m->name, tfl_ctx_error(ctx).message);
        if (before.code == TFL_OK) tfl_ctx_clear_error(ctx);
        g->refused = key;
        g->have_refused = true;
        return forward_backward(m, *x, *y, pred, per, loss);
    }
    *x = copies[0];
    *y = copies[1];
    tfl_status st = forward_backward(m, *x, *y, pred, per, loss);
    if (st != TFL_OK) {
        tfl__trace_free(tr);
        return st;
    }
    g->outs[0] = *pred;
    g->outs[1] = *per;
    g->outs[2] = *loss;
    for (int i = 0; i < m->n_train_vars; i++) g->outs[3 + i] = m->grads[i];
    char why[200] = "";
    g->tr = tfl__trace_end(tr, 3 + m->n_train_vars, g->outs, why, sizeof why);
    if (g->tr) {
        g->key = key;
        tfl__log(ctx, TFL_LOG_INFO, "tfl_model_fit: %s: step recorded on %s (%zu calls); "
                 "steps of its shape replay it", m->name, tfl__dev_name(key.dev),
                 tfl__trace_calls(g->tr));
    } else {
        g->refused = key;
        g->have_refused = true;
        tfl__log(ctx, TFL_LOG_INFO, "tfl_model_fit: %s: the step cannot be replayed: %s; "
                 "steps run op by op", m->name, why);
    }
    if (g->records == MAX_RECORDS && !g->tr)
        tfl__log(ctx, TFL_LOG_INFO, "tfl_model_fit: %s: %d recordings made; no more in this "
                 "fit", m->name, MAX_RECORDS);
    return TFL_OK;
}

/* One training step on (x, y), in the caller's frame: forward under a tape, gradients, the
 * callbacks' on_gradients, apply. Sets sl->loss and sl->skipped; adds the batch's loss sum
 * and correct count to fs unless a hook skipped the step: on the host, or on the device
 * (fit_sums.c), where the loss stays unread (sl->loss_stale). */
static tfl_status train_step(tfl_model *m, const tfl_fit_opts *o, const tfl_tensor *x,
                             const tfl_tensor *y, tfl_step_logs *sl, tfl__fit_sums *fs)
{
    tfl_ctx *ctx = m->ctx;
    tfl_tensor *pred = NULL, *per = NULL, *loss = NULL;
    tfl_status st = m->graph ? graph_step(m, m->graph, &x, &y, &pred, &per, &loss, sl)
                             : forward_backward(m, x, y, &pred, &per, &loss);
    bool on_device = st == TFL_OK && tfl__fit_sums_on_device(fs, loss);
    if (on_device) {
        fs->loss = loss;
        sl->loss = fs->last_loss;
        sl->loss_stale = true;
    } else if (st == TFL_OK) {
        st = tfl_tensor_get(loss, 0, &sl->loss);
    }
    if (st == TFL_OK && o->replicas) /* every replica reduces the same list: no NULL */
        for (int i = 0; i < m->n_train_vars && st == TFL_OK; i++)
            if (!m->grads[i] && !(m->grads[i] = tfl_zeros_like(ctx, m->train_vars[i])))
                st = tfl_ctx_status(ctx);
    if (st == TFL_OK) st = hooks_and_apply(m, o, sl);
    if (st != TFL_OK || sl->skipped) return st;
    int64_t b = tfl_tensor_dim(per, 0);
    double positions = positions_per_example(per); /* the correct count in examples */
    if (on_device) {
        tfl_tensor *c = NULL;
        if ((m->metrics & TFL_METRIC_ACCURACY) &&
            !(c = per_example(ctx, correct_tensor(m, pred, y), positions)))
            return tfl_ctx_status(ctx);
        return tfl__fit_sums_add(fs, loss, b, c);
    }
    fs->host_sum += sl->loss * (double)b;
    if (m->metrics & TFL_METRIC_ACCURACY) {
        double c = count_correct(m, pred, y);
        if (c < 0) return tfl_ctx_status(ctx);
        fs->host_correct += c / positions;
    }
    return TFL_OK;
}

/* ---- evaluate, predict ------------------------------------------------------------------------- */

static tfl_status check_ready(tfl_model *m, tfl_dataset *data, const char *who, bool train)
{
    tfl_ctx *ctx = m->ctx;
    TFL_CHECK_RET(ctx, data, TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT, "%s: %s: the dataset is "
                  "NULL", who, m->name);
    if (!tfl__dataset_check(ctx, data, who)) return TFL_MISUSE;
    TFL_CHECK_RET(ctx, m->n_layers > 0, TFL_FAILED_PRECONDITION, TFL_FAILED_PRECONDITION,
                  "%s: %s has no layers", who, m->name);
    TFL_CHECK_RET(ctx, m->loss != TFL_LOSS_NONE, TFL_FAILED_PRECONDITION,
                  TFL_FAILED_PRECONDITION, "%s: %s has no loss: call tfl_model_compile first",
                  who, m->name);
    TFL_CHECK_RET(ctx, !train || m->optimizer, TFL_FAILED_PRECONDITION, TFL_FAILED_PRECONDITION,
                  "%s: %s has no optimizer: compile it with one", who, m->name);
    TFL_CHECK_RET(ctx, !train || ((const tfl__ctx_obj *)(const void *)m->optimizer)->magic ==
                  TFL__MAGIC_OPTIMIZER, TFL_MISUSE, TFL_MISUSE, "%s: %s: its optimizer was "
                  "freed after tfl_model_compile (use after free)", who, m->name);
    TFL_CHECK_RET(ctx, tfl_dataset_has_labels(data), TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT,
                  "%s: %s: the dataset has no labels", who, m->name);
    TFL_CHECK_RET(ctx, m->loss != TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY ||
                  tfl_dataset_label_kind(data) != TFL_LABEL_VALUE, TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "%s: %s: the dataset's labels are real-valued targets "
                  "(label_kind value); sparse_categorical_crossentropy needs class indices "
                  "(a regression wants mean_squared_error)", who, m->name);
    return TFL_OK;
}

static tfl_status check_replicas(tfl_model *m, const tfl_replicas *r, const char *who)
{
    tfl_ctx *ctx = m->ctx;
    if (!r) return TFL_OK;
    TFL_CHECK_RET(ctx, r->count >= 1, TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT, "%s: %s: "
                  "replicas->count must be >= 1, got %d", who, m->name, r->count);
    TFL_CHECK_RET(ctx, r->index >= 0 && r->index < r->count, TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "%s: %s: replicas->index must be in [0, %d) "
                  "(replicas->count %d), got %d", who, m->name, r->count, r->count, r->index);
    TFL_CHECK_RET(ctx, r->sum, TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT, "%s: %s: "
                  "replicas->sum is NULL (the replicas' figures need an all-reduce of sums)",
                  who, m->name);
    return TFL_OK;
}

/* Adds v[0..n) across the replicas (none: v unchanged). A failing sum that kept no error
 * gets one naming `what`. */
static tfl_status reduce_sums(tfl_model *m, const tfl_replicas *r, double *v, int n,
                              const char *who, const char *what)
{
    if (!r) return TFL_OK;
    tfl_status st = r->sum(v, n, r->user);
    if (st != TFL_OK && tfl_ctx_status(m->ctx) == TFL_OK)
        tfl__set_error(m->ctx, st, "%s: %s: replicas->sum of %s failed (%s)", who, m->name,
                       what, tfl_status_name(st));
    return st;
}

/* Evaluates data (this replica's shard with replicas, the sharding restored after) and
 * reduces its sums across the replicas. */
static tfl_status evaluate(tfl_model *m, tfl_dataset *data, int64_t batch_size,
                           const tfl_replicas *r, const char *who, double *loss,
                           double *accuracy)
{
    tfl_ctx *ctx = m->ctx;
    tfl_status st = check_ready(m, data, who, false);
    if (st == TFL_OK) st = check_replicas(m, r, who);
    if (st == TFL_OK) st = tfl_dataset_batch(data, batch_or_default(batch_size), NULL);
    if (st != TFL_OK) return st;
    int shard_index = tfl_dataset_shard_index(data), shard_count = tfl_dataset_shard_count(data);
    if (r && (st = tfl_dataset_shard(data, r->index, r->count)) != TFL_OK) return st;
    double sum = 0, correct = 0;
    int64_t n = 0;
    /* on a device that is not the host the sums stay there (added in the host's order and
     * precision) and are read once at the end */
    tfl_tensor *dsum = NULL, *dcorrect = NULL;
    bool acc = (m->metrics & TFL_METRIC_ACCURACY) != 0;
    for (;;) {
        if ((st = tfl_frame_push(ctx)) != TFL_OK) break;
        tfl_tensor *x, *y;
        st = tfl__dataset_next_on(data, batch_device(m), &x, &y);
        if (st == TFL_OK && tfl_tensor_dim(x, 0) > 0) { /* an empty shard adds nothing */
            tfl_tensor *pred = tfl_model_call(m, x, false);
            tfl_tensor *per = pred ? tfl_loss_per_example(ctx, m->loss, pred, y) : NULL;
            double positions = per ? positions_per_example(per) : 1.0;
            tfl_tensor *s = per ? tfl_reduce_sum(ctx, per, 0, NULL, false) : NULL;
            s = per_example(ctx, s, positions); /* the sum over examples of their means */
            double v = 0, c = 0;
            if (s && !tfl__dev_host_memory(tfl__device_of(s))) {
                tfl_tensor *ct = acc ? per_example(ctx, correct_tensor(m, pred, y), positions)
                                     : NULL;
                st = acc && !ct ? tfl_ctx_status(ctx) : tfl__device_accumulate(ctx, &dsum, s);
                if (st == TFL_OK && ct) st = tfl__device_accumulate(ctx, &dcorrect, ct);
            } else {
                st = s ? tfl_tensor_get(s, 0, &v) : tfl_ctx_status(ctx);
                if (st == TFL_OK && acc && (c = count_correct(m, pred, y)) < 0)
                    st = tfl_ctx_status(ctx);
                c /= positions;
            }
            sum += v;
            correct += c;
            n += per ? tfl_tensor_dim(per, 0) : 0;
        }
        tfl_frame_pop(ctx);
        if (st != TFL_OK) break;
    }
    if (st == TFL_OUT_OF_RANGE && dsum) { /* the host's sums (batches on the CPU) come after */
        const tfl_tensor *t[2] = {dsum, dcorrect};
        double d[2] = {0, 0};
        if ((st = tfl__read_scalars(ctx, dcorrect ? 2 : 1, t, d)) == TFL_OK) {
            sum += d[0];
            correct += d[1];
            st = TFL_OUT_OF_RANGE;
        }
    }
    tfl_tensor_release(dsum);
    tfl_tensor_release(dcorrect);
    if (r) tfl_dataset_shard(data, shard_index, shard_count); /* valid: it was the shard */
    if (st != TFL_OUT_OF_RANGE) return st;
    double v[3] = {sum, correct, (double)n};
    if ((st = reduce_sums(m, r, v, 3, who, "the evaluation's sums")) != TFL_OK) return st;
    if (loss) *loss = v[2] > 0 ? v[0] / v[2] : NAN;
    if (accuracy)
        *accuracy = v[2] > 0 && (m->metrics & TFL_METRIC_ACCURACY) ? v[1] / v[2] : NAN;
    return TFL_OK;
}

tfl_status tfl_model_evaluate(tfl_model *m, tfl_dataset *data, int64_t batch_size, double *loss,
                              double *accuracy)
{
    if (!m) return TFL_INVALID_ARGUMENT;
    if (!tfl__model_alive(m, "tfl_model_evaluate")) return TFL_MISUSE;
    return evaluate(m, data, batch_size, NULL, "tfl_model_evaluate", loss, accuracy);
}

tfl_status tfl_model_evaluate_replicated(tfl_model *m, tfl_dataset *data, int64_t batch_size,
                                         const tfl_replicas *replicas, double *loss,
                                         double *accuracy)
{
    if (!m) return TFL_INVALID_ARGUMENT;
    if (!tfl__model_alive(m, "tfl_model_evaluate_replicated")) return TFL_MISUSE;
    return evaluate(m, data, batch_size, replicas, "tfl_model_evaluate_replicated", loss,
                    accuracy);
}

tfl_tensor *tfl_model_predict(tfl_model *m, tfl_dataset *data, int64_t batch_size)
{
    if (!m || !tfl__model_alive(m, "tfl_model_predict")) return NULL;
    tfl_ctx *ctx = m->ctx;
    TFL_CHECK_RET(ctx, data, NULL, TFL_INVALID_ARGUMENT, "tfl_model_predict: %s: the dataset is "
                  "NULL", m->name);
    if (!tfl__dataset_check(ctx, data, "tfl_model_predict")) return NULL;
    if (tfl_dataset_batch(data, batch_or_default(batch_size), NULL) != TFL_OK) return NULL;
    int64_t nb = tfl_dataset_num_batches(data);
    tfl_tensor **outs = tfl__calloc(ctx, sizeof(*outs) * (size_t)(nb > 0 ? nb : 1));
    if (!outs) return NULL;
    int64_t got = 0;
    tfl_status st = TFL_OK;
    while (st == TFL_OK && got < nb) {
        if ((st = tfl_frame_push(ctx)) != TFL_OK) break;
        tfl_tensor *x, *y;
        st = tfl__dataset_next_on(data, batch_device(m), &x, &y);
        if (st == TFL_OK && tfl_tensor_dim(x, 0) > 0) { /* an empty shard gives nothing */
            outs[got] = tfl_keep(tfl_model_call(m, x, false));
            st = outs[got] ? TFL_OK : tfl_ctx_status(ctx);
            got += outs[got] != NULL;
        }
        tfl_frame_pop(ctx);
    }
    tfl_tensor *all = NULL;
    if (st == TFL_OK || st == TFL_OUT_OF_RANGE) {
        if (!got && tfl_dataset_shard_count(data) > 1)
            tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "tfl_model_predict: %s: the dataset is "
                           "empty (shard %d of %d has no example)", m->name,
                           tfl_dataset_shard_index(data), tfl_dataset_shard_count(data));
        else if (!got)
            tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "tfl_model_predict: %s: the dataset is "
                           "empty", m->name);
        else if (got == 1) all = tfl__frame_adopt(ctx, tfl_tensor_retain(outs[0]));
        else all = tfl_concat(ctx, (int)got, (const tfl_tensor *const *)outs, 0);
    }
    for (int64_t i = 0; i < got; i++) tfl_tensor_release(outs[i]);
    tfl__host_free(ctx, outs);
    return all;
}

/* ---- progress --------------------------------------------------------------------------------- */

typedef struct progress {
    FILE *out;
    bool tty;
    double last_draw;
} progress;

static void draw_bar(progress *p, const tfl_epoch_logs *lg, int64_t batch, int64_t batches,
                     double elapsed, double loss)
{
    if (!p->out || !p->tty) return;
    double t = now_s();
    if (batch < batches && t - p->last_draw < 0.1) return;
    p->last_draw = t;
    char bar[31];
    int fill = batches > 0 ? (int)(30 * batch / batches) : 30;
    for (int i = 0; i < 30; i++) bar[i] = i < fill ? '=' : i == fill ? '>' : '.';
    bar[30] = 0;
    double rate = elapsed > 0 ? (double)lg->samples / elapsed : 0;
    double eta = batch > 0 ? elapsed * (double)(batches - batch) / (double)batch : 0;
    fprintf(p->out, "\r%lld/%lld [%s] - ETA %.0fs - %.0f samples/s - loss: %.4f\033[K",
            (long long)batch, (long long)batches, bar, eta, rate, loss);
    fflush(p->out);
}

static void print_epoch(progress *p, const tfl_epoch_logs *lg)
{
    if (!p->out) return;
    char extra[256] = "";
    size_t n = 0;
    if (!isnan(lg->accuracy)) n += (size_t)snprintf(extra + n, sizeof extra - n, " - accuracy: %.4f", lg->accuracy);
    if (!isnan(lg->val_loss)) n += (size_t)snprintf(extra + n, sizeof extra - n, " - val_loss: %.4f", lg->val_loss);
    if (!isnan(lg->val_accuracy)) n += (size_t)snprintf(extra + n, sizeof extra - n, " - val_accuracy: %.4f", lg->val_accuracy);
    if (lg->skipped_steps > 0) snprintf(extra + n, sizeof extra - n, " - skipped steps: %lld", (long long)lg->skipped_steps);
    double rate = lg->seconds > 0 ? (double)lg->samples / lg->seconds : 0;
    if (p->tty) fprintf(p->out, "\r\033[K");
    fprintf(p->out, "epoch %d/%d - %.1fs - %.0f samples/s - loss: %.4f%s\n", lg->epoch + 1,
            lg->epochs, lg->seconds, rate, lg->loss, extra);
    fflush(p->out);
}

/* ---- fit -------------------------------------------------------------------------------------- */

/* One epoch of steps. *step counts fit's steps; *stop is set when an on_step_end asked to
 * stop in the middle of the epoch (lg is then incomplete). */
static tfl_status run_epoch(tfl_model *m, tfl_dataset *train, const tfl_fit_opts *o,
                            progress *p, tfl_epoch_logs *lg, int64_t *step, bool *stop,
                            tfl__fit_sums *fs)
{
    tfl_ctx *ctx = m->ctx;
    /* batching again every epoch: evaluating a validation set that is the training set
     * re-batches it */
    tfl_status st = tfl_dataset_batch(train, batch_or_default(o->batch_size),
                                      &(tfl_batch_opts){o->shuffle, o->seed, o->drop_remainder});
    if (st == TFL_OK) st = tfl_dataset_reset(train, (uint64_t)lg->epoch);
    if (st != TFL_OK) return st;
    int64_t batches = tfl_dataset_num_batches(train), batch = 0;
    double sum = 0, correct = 0, t0 = now_s();
    tfl__fit_sums_epoch(fs, 0, 0);
    if (lg->epoch == o->initial_epoch && o->initial_batch > 0) { /* resuming mid-epoch */
        if ((st = tfl_dataset_seek(train, o->initial_batch)) != TFL_OK) return st;
        batch = o->initial_batch;
        if (!o->replicas || o->replicas->index == 0) { /* global sums: counted once */
            sum = o->initial_progress.loss_sum;
            correct = o->initial_progress.correct;
            lg->samples = o->initial_progress.samples;
            tfl__fit_sums_epoch(fs, sum, correct);
        }
        lg->skipped_steps = o->initial_progress.skipped_steps;
    }
    while (!*stop) {
        if ((st = tfl_frame_push(ctx)) != TFL_OK) return st;
        tfl_tensor *x, *y;
        st = tfl__dataset_next_on(train, batch_device(m), &x, &y);
        if (st == TFL_OK) {
            tfl_step_logs sl = {.epoch = lg->epoch, .batch = batch, .batches = batches,
                                .step = *step + 1, .samples = tfl_tensor_dim(x, 0), .loss = NAN};
            fs->sl = &sl;
            fs->loss = NULL;
            fs->loss_read = false;
            st = sl.samples > 0 ? train_step(m, o, x, y, &sl, fs) : empty_step(m, o, x, &sl);
            if (st == TFL_OK) {
                if (sl.skipped) lg->skipped_steps++;
                else lg->samples += sl.samples;
                batch++;
                (*step)++;
                sl.seconds = now_s() - t0;
                sl.progress = (tfl_epoch_progress){fs->host_sum, fs->host_correct, lg->samples,
                                                   lg->skipped_steps};
                if (fs->on_device) { /* read on the steps of sync_every */
                    sl.loss_stale = fs->dirty || (fs->loss && !fs->loss_read);
                    if (sl.loss_stale && (!fs->ever_read || sl.step % fs->every == 0 ||
                                          batch == batches))
                        st = tfl__fit_sums_read(fs, &sl);
                }
            }
            for (int i = 0; i < o->n_callbacks && st == TFL_OK; i++)
                if (o->callbacks[i].on_step_end)
                    st = o->callbacks[i].on_step_end(m, &sl, o->callbacks[i].user, stop);
            fs->sl = NULL;
        }
        fs->loss = NULL;
        tfl_frame_pop(ctx);
        if (st == TFL_OUT_OF_RANGE) break;
        if (st != TFL_OK) return st;
        draw_bar(p, lg, batch, batches, now_s() - t0,
                 lg->samples ? fs->host_sum / (double)lg->samples : NAN);
    }
    if ((st = tfl__fit_sums_end(fs, &sum, &correct)) != TFL_OK) return st;
    if (o->replicas) { /* the epoch's figures are the replicas' together */
        double v[3] = {sum, correct, (double)lg->samples};
        if ((st = reduce_sums(m, o->replicas, v, 3, "tfl_model_fit", "the epoch's sums")) != TFL_OK)
            return st;
        sum = v[0];
        correct = v[1];
        lg->samples = (int64_t)v[2];
    }
    lg->seconds = now_s() - t0;
    lg->loss = lg->samples ? sum / (double)lg->samples : NAN;
    lg->accuracy = lg->samples && (m->metrics & TFL_METRIC_ACCURACY) ? correct / (double)lg->samples
                                                                      : NAN;
    return TFL_OK;
}

/* The validation data fits the training data's examples (checked before any step). */
static tfl_status check_validation(tfl_model *m, tfl_dataset *train, tfl_dataset *val)
{
    tfl_status st = check_ready(m, val, "tfl_model_fit: validation", false);
    if (st != TFL_OK) return st;
    int r = tfl_dataset_feature_rank(train), rv = tfl_dataset_feature_rank(val);
    const int64_t *s = tfl_dataset_feature_shape(train), *sv = tfl_dataset_feature_shape(val);
    char a[128], b[128];
    TFL_CHECK_RET(m->ctx, tfl__same_shape(r, s, rv, sv), TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "tfl_model_fit: %s: validation examples of shape %s do "
                  "not match the training examples' %s", m->name,
                  tfl__shape_str(rv, sv, b, sizeof b), tfl__shape_str(r, s, a, sizeof a));
    return TFL_OK;
}

static tfl_status check_fit_opts(tfl_model *m, const tfl_fit_opts *o)
{
    tfl_ctx *ctx = m->ctx;
    int epochs = o->epochs ? o->epochs : 1;
    TFL_CHECK_RET(ctx, o->epochs >= 0 && o->initial_epoch >= 0 && o->initial_epoch < epochs,
                  TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT, "tfl_model_fit: %s: epochs must "
                  "be >= 1 and initial_epoch in [0, epochs), got epochs %d, initial_epoch %d",
                  m->name, o->epochs, o->initial_epoch);
    TFL_CHECK_RET(ctx, o->batch_size >= 0, TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT,
                  "tfl_model_fit: %s: batch_size must be >= 1 (0: %d), got %lld", m->name,
                  TFL_DEFAULT_BATCH_SIZE,
                  (long long)o->batch_size);
    TFL_CHECK_RET(ctx, o->initial_batch >= 0 && o->initial_step >= 0 &&
                  o->initial_progress.samples >= 0 && o->initial_progress.skipped_steps >= 0,
                  TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT, "tfl_model_fit: %s: initial_batch, "
                  "initial_step and initial_progress's counts must be >= 0, got %lld, %lld, "
                  "%lld, %lld", m->name, (long long)o->initial_batch, (long long)o->initial_step,
                  (long long)o->initial_progress.samples,
                  (long long)o->initial_progress.skipped_steps);
    TFL_CHECK_RET(ctx, o->sync_every >= 0, TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT,
                  "tfl_model_fit: %s: sync_every must be >= 0 (0: read the loss every step), "
                  "got %lld", m->name, (long long)o->sync_every);
    TFL_CHECK_RET(ctx, o->n_callbacks >= 0 && (o->callbacks || !o->n_callbacks),
                  TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT, "tfl_model_fit: %s: %d callbacks "
                  "given without an array", m->name, o->n_callbacks);
    return TFL_OK;
}

tfl_status tfl_model_fit(tfl_model *m, tfl_dataset *train, const tfl_fit_opts *opts,
                         tfl_history *history)
{
    if (!m) return TFL_INVALID_ARGUMENT;
    if (!tfl__model_alive(m, "tfl_model_fit")) return TFL_MISUSE;
    tfl_fit_opts o = opts ? *opts : (tfl_fit_opts){0};
    tfl_status st = check_ready(m, train, "tfl_model_fit", true);
    if (st == TFL_OK) st = check_fit_opts(m, &o);
    if (st == TFL_OK) st = check_replicas(m, o.replicas, "tfl_model_fit");
    if (st == TFL_OK && o.validation) st = check_validation(m, train, o.validation);
    if (st != TFL_OK) return st;
    if (history && !o.append_history) history->count = 0;
    TFL_CHECK_RET(m->ctx, !history || history->count >= 0, TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "tfl_model_fit: %s: history->count is %d", m->name,
                  history ? history->count : 0);
    int epochs = o.epochs ? o.epochs : 1;
    st = tfl_dataset_batch(train, batch_or_default(o.batch_size),
                           &(tfl_batch_opts){o.shuffle, o.seed, o.drop_remainder});
    if (st != TFL_OK) return st;
    TFL_CHECK_RET(m->ctx, tfl_dataset_num_batches(train) > 0, TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "tfl_model_fit: %s: the training data gives no batch "
                  "(%lld examples, batch_size %lld%s)", m->name,
                  (long long)tfl_dataset_size(train), (long long)o.batch_size,
                  o.drop_remainder ? ", drop_remainder" : "");
    TFL_CHECK_RET(m->ctx, o.initial_batch <= tfl_dataset_num_batches(train), TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "tfl_model_fit: %s: initial_batch %lld is past the %lld "
                  "batches of an epoch", m->name, (long long)o.initial_batch,
                  (long long)tfl_dataset_num_batches(train));
    /* with replicas, this replica's shard of every batch; the caller's sharding comes back */
    int shard_index = tfl_dataset_shard_index(train), shard_count = tfl_dataset_shard_count(train);
    if (o.replicas &&
        (st = tfl_dataset_shard(train, o.replicas->index, o.replicas->count)) != TFL_OK)
        return st;
    progress p = {o.progress, o.progress && isatty(fileno(o.progress)), 0};
    /* callbacks whose train_begin ran get their train_end, even after an error */
    int begun = 0;
    for (; begun < o.n_callbacks && st == TFL_OK; begun++)
        if (o.callbacks[begun].on_train_begin)
            st = o.callbacks[begun].on_train_begin(m, o.callbacks[begun].user);
    if (st != TFL_OK) begun--; /* the one that failed cleaned up after itself */
    tfl_epoch_logs lg = {0}, last = {0};
    bool stop = false, any = false;
    int64_t step = o.initial_step;
    tfl__fit_sums fs = {.model = m, .every = o.sync_every};
    m->running_fit = &fs;
    tfl__step_graph graph = {0};
    m->graph = o.step_graphs ? &graph : NULL;
    for (int e = o.initial_epoch; e < epochs && st == TFL_OK && !stop; e++) {
        lg = (tfl_epoch_logs){.epoch = e, .epochs = epochs, .loss = NAN, .accuracy = NAN,
                              .val_loss = NAN, .val_accuracy = NAN};
        if (p.out && p.tty) fprintf(p.out, "epoch %d/%d\n", e + 1, epochs);
        if ((st = run_epoch(m, train, &o, &p, &lg, &step, &stop, &fs)) != TFL_OK || stop) break;
        if (o.validation) {
            st = evaluate(m, o.validation, batch_or_default(o.batch_size), o.replicas,
                          "tfl_model_fit: validation", &lg.val_loss, &lg.val_accuracy);
            if (st != TFL_OK) break;
        }
        any = true;
        last = lg;
        print_epoch(&p, &lg);
        if (history) {
            if (history->count < history->cap && history->logs) history->logs[history->count] = lg;
            history->count++;
        }
        for (int i = 0; i < o.n_callbacks && st == TFL_OK; i++)
            if (o.callbacks[i].on_epoch_end)
                st = o.callbacks[i].on_epoch_end(m, &lg, o.callbacks[i].user, &stop);
    }
    for (int i = 0; i < begun; i++)
        if (o.callbacks[i].on_train_end) {
            tfl_status s = o.callbacks[i].on_train_end(m, any ? &last : NULL, o.callbacks[i].user);
            if (st == TFL_OK) st = s;
        }
    m->running_fit = NULL;
    m->graph = NULL;
    tfl__trace_free(graph.tr);
    tfl__host_free(m->ctx, graph.outs);
    tfl__fit_sums_free(&fs);
    if (o.replicas) tfl_dataset_shard(train, shard_index, shard_count);
    return st;
}
