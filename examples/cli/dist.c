/*
 * examples/cli/dist.c: `mpirun -np N tapeflow train CONFIG`. tfl_comm_world finds the
 * launcher's variables and loads libtapeflow_mpi; the job's communicator goes to every rank's
 * run (tfl_run_opts.comm), which does the rest (<tapeflow/run.h>). Here: a rank that fails
 * prints "tapeflow: rank R of N: error: ..." and ends the job (tfl_comm_abort), so that no
 * rank waits forever for it. Without mpirun nothing here changes a run.
 */
#include "cli.h"

static tfl_comm *job; /* the job's world, on the program's context (alive until exit) */
int cli_rank, cli_ranks = 1;
tfl_comm *cli_comm;
char cli_rank_label[48];

int cli_dist_start(tfl_ctx *ctx)
{
    if (!(job = tfl_comm_world(ctx, NULL))) return cli_fail(ctx, "starting MPI", 0);
    cli_rank = tfl_comm_rank(job);
    cli_ranks = tfl_comm_size(job);
    if (cli_ranks == 1) return CLI_OK;
    cli_comm = job;
    snprintf(cli_rank_label, sizeof cli_rank_label, "rank %d of %d: ", cli_rank, cli_ranks);
    /* the rank's place on its host, now while every rank is here (a collective the first
     * time, kept by the communicator): the run's device rule reads it, also where rank 0
     * alone goes on (predict) */
    int local, locals;
    if (tfl_comm_local_rank(job, &local, &locals) != TFL_OK)
        return cli_fail(ctx, "finding the ranks of this host", 0);
    return CLI_OK;
}

int cli_dist_end(int code)
{
    if (!job) return code;
    fflush(stdout);
    fflush(stderr);
    /* a failure on one rank, or the same on all: end the job, nobody waits in a collective */
    if (cli_ranks > 1 && code != CLI_OK && code != CLI_INTERRUPTED) tfl_comm_abort(job, code);
    tfl_comm_free(job);
    job = cli_comm = NULL;
    return code;
}
