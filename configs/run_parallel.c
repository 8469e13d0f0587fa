/*
 * configs/run_parallel.c: a run on several processes (tfl_run_opts.comm with more than one
 * rank: `mpirun -np N tapeflow train`, or an application's own communicator). Every rank
 * opens the same run on its own device (tfl_comm_device: one rank per GPU), rank 0's
 * variables are broadcast, each rank trains on its shard of every global batch
 * (training.batch_size stays the global batch), the gradients are all-reduced first among the
 * gradient hooks (the non-finite guard and clipping then see the global gradient), every rank
 * stops at the same step, and only rank 0 writes the run directory, checkpoints, metrics and
 * events. The step checkpoint's figures are the epoch's global sums, so that a resumed epoch
 * reports what a straight run does; every rank restores a checkpoint on resume (the data
 * position counts global batches, so any number of ranks resumes any checkpoint).
 */
#include "run_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

bool tfl__run_dp_parallel(const tfl__run_dp *d)
{
    return d->comm && tfl_comm_size(d->comm) > 1;
}

/* st of a call on the job's communicator, whose context may be another than the run's: its
 * error is kept in the run's context too, after `what` */
static tfl_status relay_as(const tfl__run_dp *d, tfl_status st, const char *what)
{
    tfl_ctx *job = tfl_comm_ctx(d->comm);
    if (st == TFL_OK || (job == d->ctx && (!what[0] || tfl_ctx_error(job).code != st))) return st;
    char msg[TFL_MSG_SIZE]; /* a communicator of the run's own context: its error reworded */
    snprintf(msg, sizeof msg, "%s", tfl_ctx_error(job).message);
    if (job == d->ctx) tfl_ctx_clear_error(d->ctx);
    return tfl__set_error(d->ctx, st, "%s%s", what, msg);
}
static tfl_status relay(const tfl__run_dp *d, tfl_status st)
{
    return relay_as(d, st, "");
}

tfl_status tfl__run_dp_open(tfl__run_dp *d, tfl_config *cfg, tfl_comm *comm, char *note,
                            size_t size)
{
    memset(d, 0, sizeof *d);
    d->ctx = cfg->ctx;
    d->comm = comm;
    d->writer = !comm || tfl_comm_rank(comm) == 0;
    note[0] = '\0';
    if (!tfl__run_dp_parallel(d)) return TFL_OK;
    /* the rank's device, before tfl_config_apply_context would push training.device's */
    const rval *dev = tfl__rget(tfl__rget(cfg->res, "training")->sec, "device");
    const char *requested = dev && dev->set ? dev->s : "auto";
    char device[32];
    TFL_TRY(relay_as(d, tfl_comm_device(comm, requested, device, sizeof device),
                     "training.device: "));
    int local = 0, locals = 1;
    TFL_TRY(relay(d, tfl_comm_local_rank(comm, &local, &locals)));
    snprintf(note, size, "rank %d of %d (local rank %d of %d on this host): %s",
             tfl_comm_rank(comm), tfl_comm_size(comm), local, locals, device);
    /* auto on a machine without GPUs: no scope, as with one process */
    if (!strcasecmp(requested, "auto") && !strcmp(device, "CPU:0")) return TFL_OK;
    if (cfg->device_scope) return TFL_OK; /* an earlier run of this config pushed it */
    TFL_TRY(tfl_device_scope_push(cfg->ctx, device));
    cfg->device_scope = true;
    return TFL_OK;
}

tfl_status tfl__run_dp_barrier(tfl__run_dp *d)
{
    return tfl__run_dp_parallel(d) ? relay(d, tfl_comm_barrier(d->comm)) : TFL_OK;
}

/* Stops every rank at the same step: any rank's stop (a cancel, a save request) is all's. */
static tfl_status sync_stop(tfl_model *m, const tfl_step_logs *lg, void *user, bool *stop)
{
    (void)m, (void)lg;
    tfl__run_dp *d = user;
    double any = *stop || *d->cancel;
    tfl_status st = tfl_comm_allreduce_doubles(d->train, &any, 1);
    if (st == TFL_OK && any > 0) *stop = true;
    return st;
}

/* The step checkpoint on every rank: the epoch's sums of the step are reduced across the
 * ranks (a collective, so on every rank at every step: 3 doubles), and rank 0 saves with the
 * global sums. */
static tfl_status ckpt_begin(tfl_model *m, void *user)
{
    tfl__run_dp *d = user;
    return d->writer && d->saver.on_train_begin ? d->saver.on_train_begin(m, d->saver.user)
                                                : TFL_OK;
}
static tfl_status ckpt_epoch_end(tfl_model *m, const tfl_epoch_logs *lg, void *user, bool *stop)
{
    tfl__run_dp *d = user;
    return d->writer && d->saver.on_epoch_end ? d->saver.on_epoch_end(m, lg, d->saver.user, stop)
                                              : TFL_OK;
}
static tfl_status ckpt_end(tfl_model *m, const tfl_epoch_logs *lg, void *user)
{
    tfl__run_dp *d = user;
    return d->writer && d->saver.on_train_end ? d->saver.on_train_end(m, lg, d->saver.user)
                                              : TFL_OK;
}
static tfl_status ckpt_step_end(tfl_model *m, const tfl_step_logs *logs, void *user, bool *stop)
{
    tfl__run_dp *d = user;
    tfl_step_logs g; /* the step's sums, read when fit left them on the device */
    TFL_TRY(tfl_step_logs_read(m, logs, &g));
    double sums[3] = {g.progress.loss_sum, g.progress.correct, (double)g.progress.samples};
    tfl_status st = tfl_comm_allreduce_doubles(d->train, sums, 3);
    if (st != TFL_OK || !d->writer || !d->saver.on_step_end) return st;
    g.progress.loss_sum = sums[0], g.progress.correct = sums[1];
    g.progress.samples = (int64_t)sums[2];
    return d->saver.on_step_end(m, &g, d->saver.user, stop);
}

/* the training communicator: the run's, with training.allreduce_bucket_mb */
static tfl_comm *train_comm(tfl__run_dp *d, tfl_ctx *ctx, const tfl_config *cfg)
{
    if (d->train) return d->train;
    double mb = tfl__rget(tfl__rget(cfg->res, "training")->sec, "allreduce_bucket_mb")->f;
    int64_t bucket = (int64_t)(mb * 1048576.0);
    tfl_comm_opts o = {.bucket_bytes = bucket > 0 ? bucket : 1};
    return d->train = tfl_comm_world(ctx, &o);
}

tfl_status tfl__run_dp_fit(tfl__run_dp *d, tfl_ctx *ctx, const tfl_config *cfg,
                           volatile sig_atomic_t *cancel, tfl_fit_opts *fo, tfl_callback *cbs,
                           int *n, int cap, tfl_nonfinite_guard *guard)
{
    if (!tfl__run_dp_parallel(d)) return TFL_OK;
    TFL_CHECK(ctx, *n >= 2 && *n + 2 <= cap, TFL_INTERNAL,
              "the data-parallel run: %d callbacks and room for %d", *n, cap);
    if (!train_comm(d, ctx, cfg)) return tfl_ctx_status(ctx);
    d->cancel = cancel;
    /* cbs[0] the metrics CSV (rank 0 only), cbs[*n - 1] the step checkpoint (wrapped) */
    d->saver = cbs[*n - 1];
    cbs[*n - 1] = (tfl_callback){.on_train_begin = ckpt_begin,
                                 .on_epoch_end = ckpt_epoch_end,
                                 .on_train_end = ckpt_end,
                                 .on_step_end = ckpt_step_end,
                                 .user = d};
    if (!d->writer) memmove(cbs, cbs + 1, (size_t)--*n * sizeof *cbs);
    /* the all-reduce first: the non-finite guard then sees the global gradient everywhere */
    memmove(cbs + 1, cbs, (size_t)*n * sizeof *cbs);
    d->dp = (tfl_data_parallel){.comm = d->train};
    cbs[0] = tfl_data_parallel_callback(&d->dp);
    cbs[*n + 1] = (tfl_callback){.on_step_end = sync_stop, .user = d};
    *n += 2;
    d->replicas = tfl_comm_replicas(d->train);
    fo->replicas = &d->replicas;
    /* the non-finite guard decides on every rank's loss: all skip, or all halt, together */
    guard->replicas = &d->replicas;
    return TFL_OK;
}

const tfl_replicas *tfl__run_dp_replicas(tfl__run_dp *d, tfl_ctx *ctx, const tfl_config *cfg)
{
    if (!tfl__run_dp_parallel(d) || !train_comm(d, ctx, cfg)) return NULL;
    d->replicas = tfl_comm_replicas(d->train);
    return &d->replicas;
}

void tfl__run_dp_close(tfl__run_dp *d)
{
    tfl_comm_free(d->train);
    d->train = NULL;
}
