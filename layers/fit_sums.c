/*
 * layers/fit_sums.c: the epoch's loss sum and correct count of tfl_model_fit. On the host (the
 * CPU, or tfl_fit_opts.sync_every 0) fit adds doubles it reads every step. With sync_every on
 * a device whose memory is not the host's, the sums are float64 scalars on the device, added
 * with ops in the host's order (sum + loss·b, correct + c: the same IEEE operations, so the
 * same bits), and the host reads them, with the step's loss, in one copy per read: on the
 * steps fit syncs (see tfl_fit_opts.sync_every) and when a callback asks (tfl_step_logs_read).
 */
#include "layers_internal.h"

#include <math.h>

void tfl__fit_sums_epoch(tfl__fit_sums *fs, double sum0, double correct0)
{
    tfl_tensor_release(fs->sum);
    tfl_tensor_release(fs->correct);
    fs->sum = fs->correct = NULL;
    fs->decided = fs->on_device = fs->dirty = fs->loss_read = false;
    fs->loss = NULL;
    fs->host_sum = sum0;
    fs->host_correct = correct0;
}

/* A float64 scalar on dev holding v, owned by the caller (no frame). */
static tfl_tensor *scalar_on(tfl_ctx *ctx, tfl__device *dev, double v)
{
    tfl_tensor *t = tfl__tensor_alloc(ctx, dev, TFL_DTYPE_FLOAT64, 0, NULL);
    if (t && tfl__dev_copy_host(dev, tfl__tensor_data(t), &v, sizeof v, 0) != TFL_OK) {
        tfl_tensor_release(t);
        return NULL;
    }
    return t;
}

bool tfl__fit_sums_on_device(tfl__fit_sums *fs, const tfl_tensor *loss)
{
    if (!fs->decided) {
        fs->decided = true;
        fs->on_device = fs->every > 0 && !tfl__dev_host_memory(tfl__device_of(loss));
    }
    return fs->on_device;
}

/* The batch size b as a float64 scalar on dev, made once per size (two sizes an epoch: the
 * batch and the last, shorter one). */
static tfl_tensor *batch_size_on(tfl__fit_sums *fs, tfl__device *dev, int64_t b)
{
    for (int i = 0; i < 2; i++)
        if (fs->bs[i] && fs->bv[i] == b && tfl__device_of(fs->bs[i]) == dev) return fs->bs[i];
    int i = fs->bs[0] && !fs->bs[1] ? 1 : 0;
    if (fs->bs[0] && fs->bs[1]) { /* both taken: the older size goes */
        tfl_tensor_release(fs->bs[0]);
        fs->bs[0] = fs->bs[1];
        fs->bv[0] = fs->bv[1];
        fs->bs[1] = NULL;
        i = 1;
    }
    fs->bs[i] = scalar_on(fs->model->ctx, dev, (double)b);
    fs->bv[i] = b;
    return fs->bs[i];
}

/* *acc = *acc + v, as a new owned tensor. */
static bool accumulate(tfl_ctx *ctx, tfl_tensor **acc, const tfl_tensor *v)
{
    tfl_tensor *n = tfl_keep(tfl_add(ctx, *acc, v));
    if (!n) return false;
    tfl_tensor_release(*acc);
    *acc = n;
    return true;
}

tfl_status tfl__fit_sums_add(tfl__fit_sums *fs, const tfl_tensor *loss, int64_t b,
                             const tfl_tensor *correct)
{
    tfl_ctx *ctx = fs->model->ctx;
    tfl__device *dev = tfl__device_of(loss);
    if (!fs->sum && !(fs->sum = scalar_on(ctx, dev, fs->host_sum))) return tfl_ctx_status(ctx);
    if (!fs->correct && !(fs->correct = scalar_on(ctx, dev, fs->host_correct)))
        return tfl_ctx_status(ctx);
    tfl_tensor *bs = batch_size_on(fs, dev, b);
    tfl_tensor *part = bs ? tfl_mul(ctx, tfl_cast(ctx, loss, TFL_DTYPE_FLOAT64), bs) : NULL;
    if (!part || !accumulate(ctx, &fs->sum, part) ||
        (correct && !accumulate(ctx, &fs->correct, correct)))
        return tfl_ctx_status(ctx) != TFL_OK ? tfl_ctx_status(ctx) : TFL_INTERNAL;
    fs->dirty = true;
    return TFL_OK;
}

/* t as a tensor of shape (1,) of float64 (a view or a cast of a scalar). */
static tfl_tensor *one(tfl_ctx *ctx, const tfl_tensor *t)
{
    static const int64_t shape[1] = {1};
    return tfl_reshape(ctx, tfl_cast(ctx, t, TFL_DTYPE_FLOAT64), 1, shape);
}

tfl_status tfl__fit_sums_read(tfl__fit_sums *fs, tfl_step_logs *sl)
{
    tfl_ctx *ctx = fs->model->ctx;
    const tfl_tensor *parts[3];
    int n = 0;
    bool sums = fs->sum != NULL;
    if (sums) {
        parts[n++] = one(ctx, fs->sum);
        parts[n++] = one(ctx, fs->correct);
    }
    if (fs->loss) parts[n++] = one(ctx, fs->loss);
    if (n == 0) { /* nothing on the device: an empty step's figures are known */
        sl->loss_stale = false;
        return TFL_OK;
    }
    for (int i = 0; i < n; i++)
        if (!parts[i]) return tfl_ctx_status(ctx);
    const tfl_tensor *all = n == 1 ? parts[0] : tfl_concat(ctx, n, parts, 0);
    double v[3];
    tfl_status st =
        all ? tfl_tensor_to_host(all, v, sizeof(double) * (size_t)n) : tfl_ctx_status(ctx);
    if (st != TFL_OK) return st;
    fs->reads++;
    fs->ever_read = true;
    if (sums) {
        fs->host_sum = v[0];
        fs->host_correct = v[1];
        fs->dirty = false;
        sl->progress.loss_sum = v[0];
        sl->progress.correct = v[1];
    }
    if (fs->loss) {
        fs->last_loss = sl->loss = v[n - 1];
        fs->loss_read = true;
    }
    sl->loss_stale = false;
    return TFL_OK;
}

tfl_status tfl__fit_sums_end(tfl__fit_sums *fs, double *sum, double *correct)
{
    tfl_ctx *ctx = fs->model->ctx;
    tfl_status st = TFL_OK;
    if (fs->on_device && fs->dirty) {
        if ((st = tfl_frame_push(ctx)) != TFL_OK) return st;
        tfl_step_logs sl = {0};
        fs->loss = NULL;
        st = tfl__fit_sums_read(fs, &sl);
        tfl_frame_pop(ctx);
    }
    *sum = fs->host_sum;
    *correct = fs->host_correct;
    tfl__fit_sums_epoch(fs, 0, 0);
    return st;
}

void tfl__fit_sums_free(tfl__fit_sums *fs)
{
    tfl__fit_sums_epoch(fs, 0, 0);
    for (int i = 0; i < 2; i++) {
        tfl_tensor_release(fs->bs[i]);
        fs->bs[i] = NULL;
    }
}

tfl_status tfl__device_accumulate(tfl_ctx *ctx, tfl_tensor **acc, const tfl_tensor *v)
{
    if (!*acc && !(*acc = scalar_on(ctx, tfl__device_of(v), 0.0))) return tfl_ctx_status(ctx);
    tfl_tensor *v64 = tfl_cast(ctx, v, TFL_DTYPE_FLOAT64);
    return v64 && accumulate(ctx, acc, v64) ? TFL_OK : tfl_ctx_status(ctx);
}

tfl_status tfl__read_scalars(tfl_ctx *ctx, int n, const tfl_tensor *const *t, double *out)
{
    tfl_status st = tfl_frame_push(ctx);
    if (st != TFL_OK) return st;
    const tfl_tensor *parts[8];
    for (int i = 0; i < n && i < 8 && st == TFL_OK; i++)
        if (!(parts[i] = one(ctx, t[i]))) st = tfl_ctx_status(ctx);
    const tfl_tensor *all = st != TFL_OK ? NULL : n == 1 ? parts[0] : tfl_concat(ctx, n, parts, 0);
    if (st == TFL_OK)
        st = all ? tfl_tensor_to_host(all, out, sizeof(double) * (size_t)n) : tfl_ctx_status(ctx);
    tfl_frame_pop(ctx);
    return st;
}

tfl_status tfl_step_logs_read(tfl_model *m, const tfl_step_logs *logs, tfl_step_logs *out)
{
    if (!m) return TFL_INVALID_ARGUMENT;
    if (!tfl__model_alive(m, "tfl_step_logs_read")) return TFL_MISUSE;
    TFL_CHECK(m->ctx, logs && out, TFL_INVALID_ARGUMENT,
              "tfl_step_logs_read: %s: logs and out "
              "must not be NULL",
              m->name);
    tfl_step_logs copy = *logs;
    if (copy.loss_stale) {
        tfl__fit_sums *fs = m->running_fit;
        TFL_CHECK(m->ctx, fs && fs->sl && fs->sl->step == copy.step, TFL_FAILED_PRECONDITION,
                  "tfl_step_logs_read: %s: step %lld is not the current step of a running fit "
                  "(its loss on the device is gone)",
                  m->name, (long long)copy.step);
        if (fs->sl->loss_stale) {
            tfl_status st = tfl__fit_sums_read(fs, fs->sl);
            if (st != TFL_OK) return st;
        }
        copy.loss = fs->sl->loss;
        copy.progress.loss_sum = fs->sl->progress.loss_sum;
        copy.progress.correct = fs->sl->progress.correct;
        copy.loss_stale = false;
    }
    *out = copy;
    return TFL_OK;
}
