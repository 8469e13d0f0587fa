/*
 * layers/tensorboard.c: the TensorBoard callback of tfl_model_fit (tapeflow/model.h): step
 * scalars from on_gradients (learning rate, gradient norm) and on_step_end (loss,
 * samples/s), epoch figures and histograms from on_epoch_end, through two summary writers
 * (train, validation) that on_train_end closes.
 */
#include "layers_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

/* The steps of this fit so far at a step of fit's count: fit's count continues from its
 * initial_step (a resumed fit), which the first step seen gives away. */
static int64_t fit_steps(tfl_tensorboard *tb, int64_t fit_step)
{
    if (tb->fit_step0 < 0) tb->fit_step0 = fit_step - 1;
    return fit_step - tb->fit_step0;
}

/* the global step g is logged when a multiple of every_steps */
static bool due(const tfl_tensorboard *tb, int64_t g)
{
    return tb->every_steps > 0 && g % tb->every_steps == 0;
}

/* <logdir>/<sub>, a writer in it, SessionLog{START} at base + 1 */
static tfl_summary_writer *open_writer(tfl_model *m, tfl_tensorboard *tb, const char *sub)
{
    size_t n = strlen(tb->logdir) + strlen(sub) + 2;
    char *dir = tfl__host_alloc(m->ctx, n, 1);
    if (!dir) {
        tfl__set_error(m->ctx, TFL_RESOURCE_EXHAUSTED, "TensorBoard: out of memory");
        return NULL;
    }
    snprintf(dir, n, "%s/%s", tb->logdir, sub);
    tfl_summary_writer *w = tfl_summary_writer_new(m->ctx, dir, &tb->writer);
    tfl__host_free(m->ctx, dir);
    if (w && tfl_summary_session_start(w, tb->base + 1) != TFL_OK) {
        tfl_summary_writer_close(w);
        return NULL;
    }
    return w;
}

static tfl_status tb_begin(tfl_model *m, void *user)
{
    tfl_tensorboard *tb = user;
    TFL_CHECK_RET(m->ctx, tb, TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT,
                  "TensorBoard: the callback's settings are NULL");
    tb->train = tb->validation = NULL;
    if (!tb->logdir) return TFL_OK;
    TFL_CHECK_RET(m->ctx, tb->every_steps >= 0, TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT,
                  "TensorBoard: every_steps must be >= 0, got %lld", (long long)tb->every_steps);
    tb->base = tb->initial_step;
    if (tb->base == 0 && m->optimizer) {
        double it = 0;
        tfl_tensor *iters = tfl_optimizer_iterations(m->optimizer);
        if (iters && tfl_tensor_get(iters, 0, &it) == TFL_OK) tb->base = (int64_t)it;
    }
    tb->last_step = 0;
    tb->fit_step0 = -1;
    tb->learning_rate = tb->grad_norm = NAN;
    tb->samples_since = 0;
    tb->seconds_at_log = 0;
    tb->train = open_writer(m, tb, "train");
    if (!tb->train) return tfl_ctx_status(m->ctx);
    if (tb->text) {
        tfl_status st = tfl_summary_text(tb->train, "config", tb->base + 1, tb->text);
        if (st != TFL_OK) {
            tfl_summary_writer_close(tb->train);
            tb->train = NULL;
            return st;
        }
    }
    return TFL_OK;
}

/* "<prefix>/<variable name>" histograms of n tensors (NULL ones skipped) */
static tfl_status histograms(tfl_model *m, tfl_summary_writer *w, const char *prefix, int n,
                             tfl_tensor *const *vars, tfl_tensor *const *values, int64_t step)
{
    for (int i = 0; i < n; i++) {
        if (!values[i]) continue;
        char tag[512];
        snprintf(tag, sizeof tag, "%s/%s", prefix, tfl_variable_name(vars[i]));
        tfl_status st = tfl_summary_histogram_tensor(w, tag, step, values[i]);
        if (st != TFL_OK) return st;
    }
    (void)m;
    return TFL_OK;
}

/* sum of squares of a contiguous float tensor in host memory (CPU:0), in one pass with
 * four accumulators; false for anything else */
static bool host_sum_squares(const tfl_tensor *t, double *out)
{
    tfl_dtype dt = tfl_tensor_dtype(t);
    const char *dev = tfl_tensor_device(t);
    if (!dev || strncmp(dev, "CPU:", 4) || !tfl_tensor_is_contiguous(t) ||
        (dt != TFL_DTYPE_FLOAT32 && dt != TFL_DTYPE_FLOAT64))
        return false;
    int64_t n = tfl_tensor_numel(t), i = 0;
    double a[4] = {0, 0, 0, 0};
    if (dt == TFL_DTYPE_FLOAT32) {
        const float *p = tfl_tensor_data_ptr(t);
        for (; i + 4 <= n; i += 4)
            for (int k = 0; k < 4; k++) a[k] += (double)p[i + k] * (double)p[i + k];
        for (; i < n; i++) a[0] += (double)p[i] * (double)p[i];
    } else {
        const double *p = tfl_tensor_data_ptr(t);
        for (; i + 4 <= n; i += 4)
            for (int k = 0; k < 4; k++) a[k] += p[i + k] * p[i + k];
        for (; i < n; i++) a[0] += p[i] * p[i];
    }
    *out = (a[0] + a[1]) + (a[2] + a[3]);
    return true;
}

/* The optimizer's loss scale: 1 without loss scaling (tfl_optimizer_loss_scale). */
static double loss_scale(const tfl_model *m)
{
    return m->optimizer ? tfl_optimizer_loss_scale(m->optimizer) : 1.0;
}

/* Dynamic loss scaling's scale and skipped steps, after the step's apply. */
static tfl_status scaler_scalars(tfl_model *m, tfl_summary_writer *w, int64_t g)
{
    const tfl_optimizer_opts *o = m->optimizer ? tfl_optimizer_options(m->optimizer) : NULL;
    if (!o || o->loss_scale <= 0) return TFL_OK;
    tfl_status st = tfl_summary_scalar(w, "step/loss_scale", g, loss_scale(m));
    if (st != TFL_OK) return st;
    return tfl_summary_scalar(w, "step/skipped_steps", g,
                              (double)tfl_optimizer_skipped_steps(m->optimizer));
}

static tfl_status tb_gradients(tfl_model *m, int n, tfl_tensor *const *vars, tfl_tensor **grads,
                               const tfl_step_logs *logs, void *user, bool *skip)
{
    (void)skip;
    tfl_tensorboard *tb = user;
    if (!tb->train) return TFL_OK;
    int64_t g = tb->base + fit_steps(tb, logs->step);
    if (due(tb, g)) { /* cheap: only on the steps that are logged */
        tb->learning_rate = m->optimizer ? tfl_optimizer_learning_rate(m->optimizer) : NAN;
        double sq = 0;
        for (int i = 0; i < n; i++) {
            if (!grads[i]) continue;
            double v = 0;
            if (!host_sum_squares(grads[i], &v)) { /* another device or layout: ops */
                tfl_tensor *s = tfl_reduce_sum(m->ctx, tfl_mul(m->ctx, grads[i], grads[i]), 0,
                                               NULL, false);
                if (!s || tfl_tensor_get(s, 0, &v) != TFL_OK) return tfl_ctx_status(m->ctx);
            }
            sq += v;
        }
        tb->grad_norm = sqrt(sq) / loss_scale(m); /* the loss's, not the scaled loss's */
    }
    if (tb->histograms && logs->batches > 0 && logs->batch == logs->batches - 1)
        return histograms(m, tb->train, "gradients", n, vars, grads, g);
    return TFL_OK;
}

static tfl_status tb_step(tfl_model *m, const tfl_step_logs *logs, void *user, bool *stop)
{
    (void)stop;
    tfl_tensorboard *tb = user;
    if (!tb->train) return TFL_OK;
    if (logs->batch == 0) { /* a new epoch: its clock starts at 0 */
        tb->samples_since = 0;
        tb->seconds_at_log = 0;
    }
    tb->last_step = fit_steps(tb, logs->step);
    tb->samples_since += logs->samples;
    int64_t g = tb->base + tb->last_step;
    if (!due(tb, g)) return TFL_OK;
    tfl_step_logs read; /* the loss of a logged step: read when fit left it on the device */
    tfl_status st = tfl_step_logs_read(m, logs, &read);
    if (st == TFL_OK) st = tfl_summary_scalar(tb->train, "step/loss", g, read.loss);
    if (st == TFL_OK && !isnan(tb->learning_rate))
        st = tfl_summary_scalar(tb->train, "step/learning_rate", g, tb->learning_rate);
    if (st == TFL_OK && !isnan(tb->grad_norm))
        st = tfl_summary_scalar(tb->train, "step/grad_norm", g, tb->grad_norm);
    if (st == TFL_OK) st = scaler_scalars(m, tb->train, g);
    double dt = logs->seconds - tb->seconds_at_log;
    if (st == TFL_OK && dt > 0)
        st = tfl_summary_scalar(tb->train, "step/samples_per_second", g,
                                (double)tb->samples_since / dt);
    tb->samples_since = 0;
    tb->seconds_at_log = logs->seconds;
    tb->learning_rate = tb->grad_norm = NAN;
    return st;
}

static tfl_status epoch_pair(tfl_summary_writer *w, int64_t g, double loss, double accuracy)
{
    tfl_status st = TFL_OK;
    if (!isnan(loss)) st = tfl_summary_scalar(w, "epoch/loss", g, loss);
    if (st == TFL_OK && !isnan(accuracy)) st = tfl_summary_scalar(w, "epoch/accuracy", g, accuracy);
    return st;
}

static tfl_status tb_epoch(tfl_model *m, const tfl_epoch_logs *lg, void *user, bool *stop)
{
    (void)stop;
    tfl_tensorboard *tb = user;
    if (!tb->train) return TFL_OK;
    int64_t g = tb->base + tb->last_step;
    tfl_status st = epoch_pair(tb->train, g, lg->loss, lg->accuracy);
    if (st == TFL_OK && (!isnan(lg->val_loss) || !isnan(lg->val_accuracy))) {
        if (!tb->validation && !(tb->validation = open_writer(m, tb, "validation")))
            return tfl_ctx_status(m->ctx);
        st = epoch_pair(tb->validation, g, lg->val_loss, lg->val_accuracy);
    }
    if (st == TFL_OK && tb->histograms) {
        int n = tfl_model_variables(m, TFL_VARS_TRAINABLE, NULL, 0);
        tfl_tensor **vars = n > 0 ? tfl__calloc(m->ctx, sizeof(*vars) * (size_t)n) : NULL;
        if (n > 0 && !vars) return tfl_ctx_status(m->ctx);
        if (n > 0) tfl_model_variables(m, TFL_VARS_TRAINABLE, vars, n);
        st = histograms(m, tb->train, "weights", n, vars, vars, g);
        tfl__host_free(m->ctx, vars);
    }
    if (st == TFL_OK) st = tfl_summary_flush(tb->train);
    if (st == TFL_OK && tb->validation) st = tfl_summary_flush(tb->validation);
    return st;
}

static tfl_status tb_end(tfl_model *m, const tfl_epoch_logs *last, void *user)
{
    (void)m;
    (void)last;
    tfl_tensorboard *tb = user;
    tfl_status st = tfl_summary_writer_close(tb->train);
    tfl_status sv = tfl_summary_writer_close(tb->validation);
    tb->train = tb->validation = NULL;
    return st != TFL_OK ? st : sv;
}

tfl_callback tfl_tensorboard_callback(tfl_tensorboard *tb)
{
    return (tfl_callback){.on_train_begin = tb_begin, .on_epoch_end = tb_epoch,
                          .on_train_end = tb_end, .user = tb, .on_gradients = tb_gradients,
                          .on_step_end = tb_step};
}
