/*
 * tapeflow/distributed.h: data-parallel training with tfl_model_fit, over the communicators
 * of <tapeflow/comm.h> (which it includes): every rank holds the whole model, rank 0's
 * variables are broadcast before the first step, each rank trains on its shard of every
 * global batch, and the gradients are all-reduced (a weighted mean) before the optimizer
 * applies them, as Horovod and PyTorch's DistributedDataParallel do.
 *
 * With tfl_model_fit: shard the data through the replicas, plug the callback in first.
 *
 *     tfl_comm *comm = tfl_comm_world(ctx, NULL);            // 1 rank without mpirun
 *     tfl_data_parallel dp = {.comm = comm};
 *     tfl_replicas rep = tfl_comm_replicas(comm);           // fit shards train/validation
 *     tfl_callback cbs[] = {tfl_data_parallel_callback(&dp), tfl_nonfinite_guard_callback(&g)};
 *     tfl_model_fit(m, train, &(tfl_fit_opts){.batch_size = 128,  // the global batch
 *                   .callbacks = cbs, .n_callbacks = 2, .replicas = &rep, ...}, NULL);
 *     tfl_comm_free(comm);           // MPI_Finalize at exit, if tfl_comm_world initialised it
 *
 * The callback must come before every other on_gradients hook (the non-finite guard,
 * clipping), so that those see the global gradient and decide the same on every rank.
 *
 */
#ifndef TAPEFLOW_DISTRIBUTED_H
#define TAPEFLOW_DISTRIBUTED_H

#include <tapeflow/comm.h>
#include <tapeflow/model.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Fills fit's replicas (model.h) from the communicator: shard index = rank, count = size,
 * and the sum of epoch figures through tfl_comm_allreduce_doubles. The comm is borrowed. */
TFL_API tfl_replicas tfl_comm_replicas(tfl_comm *comm);

/**
 * The data-parallel callback of tfl_model_fit (put it first):
 *  - on_train_begin: broadcasts root 0's model variables (all of them) and the optimizer's
 *    variables that exist (its step counter; its slots on a resume), after checking that
 *    every rank has the same count of them (FAILED_PRECONDITION naming the ranks' counts);
 *    the model must be built (tfl_model_build) so that the first step starts from rank 0's
 *    weights: FAILED_PRECONDITION otherwise; and makes the context's unseeded random draws
 *    this rank's (tfl_ctx_set_rng_replica(ctx, rank): each rank its own Dropout masks, one
 *    saved RNG state for all);
 *  - on_gradients: tfl_comm_allreduce_gradients with weight logs->samples (this rank's rows),
 *    so the step applies the global batch's mean gradient;
 *  - on_step_end: the non-trainable model variables (BatchNormalization's moving mean and
 *    variance) become their mean over the ranks weighted by the rows each saw (the moving
 *    mean then equals one process's on the whole batch; the moving variance misses the
 *    spread between the shards' means, as without synchronised batch norm). Averaging
 *    rather than PyTorch's broadcast from rank 0 uses every rank's statistics; either keeps
 *    the ranks identical. Integer non-trainables are broadcast from rank 0.
 * Errors: the collectives'; a rank's error while the others wait in a collective blocks
 * them: programs end the job (tfl_comm_abort) on any error.
 */
typedef struct tfl_data_parallel {
    tfl_comm *comm;                /* borrowed */
    bool no_average_non_trainable; /* leave non-trainable variables per rank */
    /* state, set by fit */
    bool broadcast_done;
    int64_t steps;
} tfl_data_parallel;
TFL_API tfl_callback tfl_data_parallel_callback(tfl_data_parallel *dp);

#ifdef __cplusplus
}
#endif

#endif /* TAPEFLOW_DISTRIBUTED_H */
