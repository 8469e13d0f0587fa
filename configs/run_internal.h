/*
 * configs/run_internal.h: what run.c shares with run_parallel.c, the run's data-parallel
 * part (tfl_run_opts.comm with more than one rank), and with run_generate.c.
 */
#ifndef TFL_RUN_INTERNAL_H
#define TFL_RUN_INTERNAL_H

#include <tapeflow/distributed.h>
#include <tapeflow/run.h>

#include "configs_internal.h"

#include <signal.h>

typedef struct tfl__run_dp {
    tfl_ctx *ctx;    /* the run's (its errors are kept there) */
    tfl_comm *comm;  /* opts.comm (borrowed; of any context), or NULL: one process */
    tfl_comm *train; /* the training communicator (training.allreduce_bucket_mb), owned */
    bool writer;     /* rank 0, or one process: writes the run directory */
    tfl_data_parallel dp;
    tfl_replicas replicas;
    tfl_callback saver;             /* the step checkpoint, wrapped by tfl__run_dp_fit */
    volatile sig_atomic_t *cancel;  /* the run's cancel flag: any rank's is every rank's */
} tfl__run_dp;

/** Whether the run has several ranks. */
bool tfl__run_dp_parallel(const tfl__run_dp *d);
/** Sets d up for comm (NULL: one process). With several ranks, before the config's context is
 * applied: pushes the rank's device scope (tfl_comm_device of training.device: one rank per
 * GPU) and writes a line saying so into note; errors: tfl_comm_device's. */
tfl_status tfl__run_dp_open(tfl__run_dp *d, tfl_config *cfg, tfl_comm *comm, char *note,
                            size_t size);
/** Waits for every rank (nothing with one process). */
tfl_status tfl__run_dp_barrier(tfl__run_dp *d);
/** Adds the data-parallel callbacks to fit's cbs[0..*n) (cap entries; cbs[0] the metrics
 * CSV, cbs[*n - 1] the step checkpoint): the all-reduce first, the stop in step last, the
 * checkpoint wrapped; sets fo->replicas and guard->replicas. Nothing with one process. */
tfl_status tfl__run_dp_fit(tfl__run_dp *d, tfl_ctx *ctx, const tfl_config *cfg,
                           volatile sig_atomic_t *cancel, tfl_fit_opts *fo, tfl_callback *cbs,
                           int *n, int cap, tfl_nonfinite_guard *guard);
/** Evaluation's replicas; NULL with one process, or with the error kept when the training
 * communicator could not be made. */
const tfl_replicas *tfl__run_dp_replicas(tfl__run_dp *d, tfl_ctx *ctx, const tfl_config *cfg);
/** Frees what d owns. */
void tfl__run_dp_close(tfl__run_dp *d);

/** The run's config and training dataset (borrowed), for run_generate.c; false for a NULL
 * run or one already closed (MISUSE kept, naming `what`). */
bool tfl__run_parts(tfl_run *r, const char *what, tfl_config **cfg, tfl_dataset **train);

#endif /* TFL_RUN_INTERNAL_H */
