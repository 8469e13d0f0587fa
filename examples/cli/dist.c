/*
 * examples/cli/dist.c: `mpirun -np N tapeflow train CONFIG`. Under mpirun (tfl_comm_world
 * finds the launcher's variables and loads libtapeflow_mpi) every rank builds the same run,
 * rank 0's variables are broadcast, each rank trains on its shard of every global batch
 * (training.batch_size stays the global batch), the gradients are all-reduced first among
 * the gradient hooks, and only rank 0 writes the run directory, checkpoints, metrics.csv and
 * progress; every rank restores a checkpoint on resume (the data position is counted in
 * global batches, so any number of ranks resumes any checkpoint). A rank that fails prints
 * "tapeflow: rank R of N: error: ..." and ends the job (MPI_Abort through tfl_comm_abort), so
 * that no rank waits forever for it. Every rank takes its device by tfl_comm_device (one rank
 * per GPU: GPU:(local rank mod GPUs) for training.device auto or GPU) and logs it on stderr;
 * the non-finite guard decides on every rank's loss (its replicas). `eval` shards the data
 * and rank 0 prints the global figures; `predict` runs on rank 0 alone. Without mpirun
 * nothing here changes a run.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The job's world: its own context, alive until exit, so that a failure anywhere in a run
 * (whose context is freed on the way out) can still end the job. */
static tfl_ctx *job_ctx;
static tfl_comm *job;
static int job_rank, job_size = 1, job_local_rank, job_local_size = 1;
char cli_rank_label[48]; /* "rank 1 of 2: " under mpirun (cli_error's prefix) */

/* The training run's communicator and callbacks. */
static tfl_comm *train_comm;
static tfl_data_parallel dp;
static tfl_replicas replicas;


int cli_dist_start(void)
{
    tfl_status st;
    job_ctx = tfl_ctx_new(NULL, &st);
    if (!job_ctx) {
        cli_error("no context: %s", tfl_status_name(st));
        return CLI_RUNTIME;
    }
    if (!(job = tfl_comm_world(job_ctx, NULL))) {
        int code = cli_ctx_error(job_ctx, "starting MPI");
        tfl_ctx_free(job_ctx);
        job_ctx = NULL;
        return code;
    }
    job_rank = tfl_comm_rank(job);
    job_size = tfl_comm_size(job);
    if (job_size > 1)
        snprintf(cli_rank_label, sizeof cli_rank_label, "rank %d of %d: ", job_rank, job_size);
    /* the rank's place on its host, now while every rank is here (a collective the first
     * time): it decides the GPU a rank drives (cli_dist_device) */
    if (job_size > 1 && tfl_comm_local_rank(job, &job_local_rank, &job_local_size) != TFL_OK)
        return cli_ctx_error(job_ctx, "finding the ranks of this host");
    return CLI_OK;
}

int cli_dist_device(const char *requested, char *device, size_t size)
{
    if (job_size == 1) { /* one process: tfl_config_apply_context's scope alone */
        snprintf(device, size, "%s", "");
        return CLI_OK;
    }
    if (tfl_comm_device(job, requested, device, size) != TFL_OK) {
        cli_error("training.device: %s", tfl_ctx_error(job_ctx).message);
        return CLI_USAGE;
    }
    fprintf(stderr, "tapeflow: rank %d of %d (local rank %d of %d on this host): %s\n", job_rank,
            job_size, job_local_rank, job_local_size, device);
    /* auto on a machine without GPUs: no scope, as with one process */
    if ((!requested || !requested[0] || !strcmp(requested, "auto")) && !strcmp(device, "CPU:0"))
        device[0] = '\0';
    return CLI_OK;
}

const tfl_replicas *cli_dist_replicas(tfl_ctx *ctx)
{
    if (job_size == 1) return NULL;
    if (!train_comm && !(train_comm = tfl_comm_world(ctx, NULL))) return NULL;
    replicas = tfl_comm_replicas(train_comm);
    return &replicas;
}

int cli_dist_end(int code)
{
    if (!job) return code;
    fflush(stdout);
    fflush(stderr);
    /* a failure on one rank, or the same on all: end the job, nobody waits in a collective */
    if (job_size > 1 && code != CLI_OK && code != CLI_INTERRUPTED) tfl_comm_abort(job, code);
    tfl_comm_free(job);
    tfl_ctx_free(job_ctx);
    job = NULL;
    return code;
}

bool cli_dist_writer(void)
{
    return job_rank == 0;
}
int cli_dist_size(void)
{
    return job_size;
}

tfl_status cli_dist_barrier(void)
{
    return job && job_size > 1 ? tfl_comm_barrier(job) : TFL_OK;
}

/* Stops every rank at the same step: any rank's stop (a signal, a save request) is all's. */
static tfl_status sync_stop(tfl_model *m, const tfl_step_logs *lg, void *user, bool *stop)
{
    (void)m, (void)lg, (void)user;
    double any = *stop || cli_interrupted;
    tfl_status st = tfl_comm_allreduce_doubles(train_comm, &any, 1);
    if (st == TFL_OK && any > 0) *stop = true;
    return st;
}

/* The step checkpoint on every rank: the epoch's sums of the step are reduced across the
 * ranks (a collective, so on every rank at every step: 4 doubles), and rank 0 saves with the
 * global sums, so that a resumed epoch reports the figures of a straight run. */
static tfl_callback saver;

static tfl_status ckpt_begin(tfl_model *m, void *user)
{
    (void)user;
    return cli_dist_writer() && saver.on_train_begin ? saver.on_train_begin(m, saver.user) : TFL_OK;
}
static tfl_status ckpt_epoch_end(tfl_model *m, const tfl_epoch_logs *lg, void *user, bool *stop)
{
    (void)user;
    return cli_dist_writer() && saver.on_epoch_end ? saver.on_epoch_end(m, lg, saver.user, stop)
                                                   : TFL_OK;
}
static tfl_status ckpt_end(tfl_model *m, const tfl_epoch_logs *lg, void *user)
{
    (void)user;
    return cli_dist_writer() && saver.on_train_end ? saver.on_train_end(m, lg, saver.user) : TFL_OK;
}
static tfl_status ckpt_step_end(tfl_model *m, const tfl_step_logs *logs, void *user, bool *stop)
{
    (void)user;
    tfl_step_logs g; /* the step's sums, read when fit left them on the device */
    tfl_status rs = tfl_step_logs_read(m, logs, &g);
    if (rs != TFL_OK) return rs;
    const tfl_step_logs *lg = &g;
    double sums[3] = {lg->progress.loss_sum, lg->progress.correct, (double)lg->progress.samples};
    tfl_status st = tfl_comm_allreduce_doubles(train_comm, sums, 3);
    if (st != TFL_OK || !cli_dist_writer() || !saver.on_step_end) return st;
    g.progress.loss_sum = sums[0], g.progress.correct = sums[1];
    g.progress.samples = (int64_t)sums[2];
    return saver.on_step_end(m, &g, saver.user, stop);
}

int cli_dist_fit(tfl_ctx *ctx, const tfl_config *cfg, tfl_fit_opts *fo, tfl_callback *cbs, int *n,
                 int cap, tfl_nonfinite_guard *guard)
{
    if (job_size == 1) return CLI_OK;
    /* cbs[0] the metrics CSV (rank 0 only), cbs[*n - 1] the step checkpoint (wrapped) */
    saver = cbs[*n - 1];
    cbs[*n - 1] = (tfl_callback){.on_train_begin = ckpt_begin,
                                 .on_epoch_end = ckpt_epoch_end,
                                 .on_train_end = ckpt_end,
                                 .on_step_end = ckpt_step_end};
    if (!cli_dist_writer()) memmove(cbs, cbs + 1, (size_t)-- * n * sizeof *cbs);
    char buf[64];
    double mb = 25;
    if (tfl_config_get(cfg, "training.allreduce_bucket_mb", buf, sizeof buf) > 0) mb = atof(buf);
    int64_t bucket = (int64_t)(mb * 1048576.0);
    if (!(train_comm =
              tfl_comm_world(ctx, &(tfl_comm_opts){.bucket_bytes = bucket > 0 ? bucket : 1})))
        return cli_ctx_error(ctx, "the training communicator");
    if (*n + 2 > cap) {
        cli_error("too many callbacks");
        return CLI_RUNTIME;
    }
    /* the all-reduce first: the non-finite guard then sees the global gradient everywhere */
    memmove(cbs + 1, cbs, (size_t)*n * sizeof *cbs);
    dp = (tfl_data_parallel){.comm = train_comm};
    cbs[0] = tfl_data_parallel_callback(&dp);
    cbs[*n + 1] = (tfl_callback){.on_step_end = sync_stop};
    *n += 2;
    replicas = tfl_comm_replicas(train_comm);
    fo->replicas = &replicas;
    /* the non-finite guard decides on every rank's loss: all skip, or all halt, together */
    guard->replicas = &replicas;
    return CLI_OK;
}
