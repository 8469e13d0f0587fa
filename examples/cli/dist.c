/*
 * examples/cli/dist.c: `mpirun -np N tapeflow train CONFIG`. tfl_comm_world finds the
 * launcher's variables and loads libtapeflow_mpi; the job's communicator goes to every rank's
 * run (tfl_run_opts.comm), which does the rest: a device per rank, the broadcast, the sharded
 * batches, the all-reduce, rank 0 alone writing (<tapeflow/run.h>). Here: a rank that fails
 * prints "tapeflow: rank R of N: error: ..." and ends the job (tfl_comm_abort), so that no
 * rank waits forever for it. Without mpirun nothing here changes a run.
 */
#include "cli.h"

/* The job's world: its own context, alive until exit, so that a failure anywhere in a run
 * (whose context is freed on the way out) can still end the job. */
static tfl_ctx *job_ctx;
static tfl_comm *job;
static int job_rank, job_size = 1;
char cli_rank_label[48]; /* "rank 1 of 2: " under mpirun (cli_error's prefix) */

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
     * time, kept by the communicator): the run's device rule reads it, also where rank 0
     * alone goes on (predict) */
    int local, locals;
    if (job_size > 1 && tfl_comm_local_rank(job, &local, &locals) != TFL_OK)
        return cli_ctx_error(job_ctx, "finding the ranks of this host");
    return CLI_OK;
}

tfl_comm *cli_dist_comm(void)
{
    return job_size > 1 ? job : NULL;
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
