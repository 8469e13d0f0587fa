/*
 * tapeflow/comm.h: communicators and collectives for data-parallel training across processes
 * (Open MPI on CPUs, NCCL on GPUs), the
 * way Horovod and PyTorch's DistributedDataParallel do it: every rank holds the whole model,
 * rank 0's variables are broadcast before the first step, each rank trains on its shard of
 * every global batch, and the gradients are all-reduced (a weighted mean) in fused buckets
 * before the optimizer applies them, so that every rank ends every step with bit-identical
 * variables and the step equals one process's step on the whole batch (up to the order of
 * the floating-point sums).
 *
 * This header is the framework's part: communicators, their transports and the collectives on
 * tensors. <tapeflow/distributed.h> (layers) adds what tfl_model_fit needs: the replicas and
 * the data-parallel callback.
 *
 * A communicator (tfl_comm) is a handle of its context. What moves the bytes is a transport
 * (tfl_comm_transport): "self" (one rank: every collective is a no-op or a copy) is built in;
 * "mpi" lives in its own library, libtapeflow_mpi (<tapeflow/distributed_mpi.h>), so that a
 * program linking tapeflow does not load libmpi (about 3 ms at every start): tfl_comm_world
 * loads it only when the process was started by mpirun.
 *
 * GPU tensors and NCCL (TFL_HAVE_NCCL in <tapeflow/version.h>: built with the CUDA backend
 * when nccl.h and libnccl were found; libnccl is loaded at the first use). Which moves a
 * collective's bytes is decided per tensor, from its device (one call may mix host tensors
 * and the tensors of one GPU: the host ones go first, then the GPU ones):
 *   - host tensors (CPU:0): the transport (MPI, self, the application's);
 *   - tensors on GPU:N, several ranks: NCCL, set up at the communicator's first GPU
 *     collective and bound to that GPU for its life (llm.c's way): the ranks gather their
 *     host, GPU and GPU count through the transport and refuse, before NCCL would, a host with
 *     more ranks than GPUs or two ranks on one GPU (FAILED_PRECONDITION naming the ranks and
 *     counts); rank 0's ncclUniqueId is broadcast through the transport; ncclCommInitRank.
 *     One rank per GPU: rank r puts its tensors on GPU:<its index among the ranks of its
 *     host> (OMPI_COMM_WORLD_LOCAL_RANK under mpirun; tfl_comm_device below). The weights of a weighted mean and
 *     which gradients are NULL still go through the transport (one small host message); the
 *     buckets are NCCL calls (ncclAllReduce with a premultiplied sum, ncclBroadcast, one
 *     ncclGroupStart/End per bucket) on the communicator's own stream of that GPU, ordered
 *     after the work issued on the GPU's stream and before the work issued after: the host
 *     does not wait for them. NCCL reduces int32, int64, float16, bfloat16, float32 and
 *     float64;
 *   - tensors on GPU:N, one rank: nothing to move, as on the host (gpu_backend "nccl" runs
 *     NCCL anyway: a check of the path on a one-GPU machine);
 *   - GPU tensors in a build without NCCL: FAILED_PRECONDITION (copy them to CPU:0).
 * NCCL's errors come back as UNAVAILABLE with ncclGetErrorString and ncclGetLastError. A
 * rank whose ncclCommInitRank fails leaves the others waiting in theirs (NCCL's own
 * behaviour): programs end the job (tfl_comm_abort) on any error.
 *
 * In a custom loop (examples/custom_loop.c), between the gradient and the update; `rows` is
 * this rank's rows of the global batch (the weight of its gradients):
 *
 *     tfl_comm_broadcast(comm, n, vars, 0);                  // once, before the first step
 *     ...
 *     tfl_tape_gradient(tape, loss, n, vars, grads, 0);
 *     tfl_comm_allreduce_gradients(comm, n, vars, grads, (double)rows);
 *     tfl_optimizer_apply(opt, n, vars, grads);
 *
 * Every collective must be called by every rank of the communicator, in the same order, with
 * the same tensor count, shapes and dtypes (a rank's NULL gradient counts as zeros); the
 * library cannot find a mismatch that MPI itself does not report, and such a program may
 * wait forever. An MPI error comes back as UNAVAILABLE with MPI's message (the communicator
 * is a duplicate with MPI_ERRORS_RETURN); the library never calls MPI_Abort or exits:
 * tfl_comm_abort is for programs that decide to end the job.
 */
#ifndef TAPEFLOW_COMM_H
#define TAPEFLOW_COMM_H

#include <stddef.h>
#include <stdint.h>

#include <tapeflow/base.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tfl_comm tfl_comm;

/**
 * What moves bytes between the ranks: the MPI transport of libtapeflow_mpi, or an
 * application's own (a test double, a future NCCL one). Every function returns 0 on success
 * or a non-zero code with a message (NUL-terminated, at most msg_size bytes) in msg.
 *  - allreduce_sum: in-place elementwise sum of count elements of dtype (float32, float64,
 *    int32, int64) across the ranks, in the same order on every rank (the result is
 *    bit-identical on every rank);
 *  - broadcast: bytes from root's buf into every other rank's buf;
 *  - barrier: returns when every rank has entered it;
 *  - abort: ends every process of the job with code (MPI_Abort), for programs only;
 *  - destroy: releases impl (frees a duplicated communicator).
 * A constructor that fails leaves `error` non-empty: tfl_comm_new reports it.
 */
typedef struct tfl_comm_transport {
    const char *name; /* "self", "mpi" */
    int rank, size;
    void *impl;
    int (*allreduce_sum)(void *impl, void *buf, int64_t count, tfl_dtype dtype, char *msg,
                         size_t msg_size);
    int (*broadcast)(void *impl, void *buf, int64_t bytes, int root, char *msg, size_t msg_size);
    int (*barrier)(void *impl, char *msg, size_t msg_size);
    void (*abort)(void *impl, int code);
    void (*destroy)(void *impl);
    char error[256]; /* set by a failed constructor */
} tfl_comm_transport;

/** PyTorch DDP's bucket_cap_mb default: 25 MiB. */
#define TFL_DEFAULT_BUCKET_BYTES ((int64_t)25 << 20)

/** Options of a communicator; all-zero means defaults. */
typedef struct tfl_comm_opts {
    /* Gradients and tensors are all-reduced through a fusion buffer of this many bytes (0:
     * TFL_DEFAULT_BUCKET_BYTES): those of one dtype are packed in list order, one bucket
     * reduced per message; a tensor larger than a bucket spans several. At least one element
     * goes into every bucket, so 1 reduces element by element. */
    int64_t bucket_bytes;
    /* tfl_comm_world: "auto" or NULL (MPI when started by mpirun: OMPI_COMM_WORLD_SIZE,
     * PMIX_RANK or PMI_RANK is set), "mpi" (always; MPI_Init even without mpirun: a
     * singleton), "self" (one rank, even under mpirun). */
    const char *backend;
    /* Collectives on GPU tensors: "auto" or NULL (NCCL with several ranks, nothing to do with
     * one), "nccl" (NCCL even with one rank; FAILED_PRECONDITION in a build without NCCL). */
    const char *gpu_backend;
} tfl_comm_opts;

/**
 * The communicator of every process of the job: with MPI, a duplicate of MPI_COMM_WORLD
 * (MPI_Init_thread(FUNNELED) first if the application has not initialised MPI; it is then
 * finalized at exit, since MPI starts once per process); one rank ("self") when the process
 * was not started by mpirun.
 * Returns NULL with the error kept: FAILED_PRECONDITION when mpirun started several ranks but
 * this build has no MPI (TFL_MPI=OFF) or libtapeflow_mpi cannot be loaded (the message says
 * which), UNAVAILABLE (MPI's own error), INVALID_ARGUMENT (an unknown backend, a negative
 * bucket size), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_comm *tfl_comm_world(tfl_ctx *ctx, const tfl_comm_opts *opts);

/** A one-rank communicator (rank 0 of 1): collectives are no-ops (means divide by 1). */
TFL_API tfl_comm *tfl_comm_self(tfl_ctx *ctx, const tfl_comm_opts *opts);

/**
 * A communicator over an application's transport, which it takes over (its destroy runs at
 * tfl_comm_free, or here on error). Errors: UNAVAILABLE with transport->error when the
 * transport's constructor failed; INVALID_ARGUMENT for a transport without its functions or
 * with rank outside [0, size).
 */
TFL_API tfl_comm *tfl_comm_new(tfl_ctx *ctx, const tfl_comm_transport *transport,
                               const tfl_comm_opts *opts);

/** Frees the communicator (MPI_Comm_free of tapeflow's duplicate: a collective, so free it
 * on every rank). NULL: no-op; freed twice: MISUSE kept in its context (base.h). */
TFL_API void tfl_comm_free(tfl_comm *comm);

/** This process's rank and the number of ranks; -1 for NULL or a freed communicator. */
TFL_API int tfl_comm_rank(const tfl_comm *comm);
TFL_API int tfl_comm_size(const tfl_comm *comm);
/** The transport's name ("self", "mpi"); "" for NULL or a freed communicator. */
TFL_API const char *tfl_comm_backend(const tfl_comm *comm);
/** "nccl" once the communicator has set NCCL up (its first collective on GPU tensors), else
 * ""; "" for NULL or a freed communicator. */
TFL_API const char *tfl_comm_gpu_backend(const tfl_comm *comm);
/** The context the communicator belongs to; NULL for NULL. */
TFL_API tfl_ctx *tfl_comm_ctx(const tfl_comm *comm);

/** Sets the fusion bucket size (see tfl_comm_opts; 0: the default). INVALID_ARGUMENT < 0. */
TFL_API tfl_status tfl_comm_set_bucket_bytes(tfl_comm *comm, int64_t bytes);

/**
 * Copies root's value of every tensor into the others' (in place: variables keep their
 * identity; a variable shared with a tape's snapshot is copied first). Tensors must be
 * contiguous tensors (host ones, and those of one GPU with NCCL: see above) of any dtype,
 * the same count, shapes and dtypes on every rank; a NULL entry is skipped (NULL on every
 * rank). Fused into buckets as the all-reduce is.
 * Errors: INVALID_ARGUMENT (n < 0, root outside [0, size), a non-contiguous tensor, naming its
 * index), FAILED_PRECONDITION (an uninitialized variable, GPU tensors without NCCL, a
 * placement NCCL refuses), MISUSE, UNAVAILABLE (MPI, NCCL).
 */
TFL_API tfl_status tfl_comm_broadcast(tfl_comm *comm, int n, tfl_tensor *const *tensors, int root);

/** How tensors are reduced. */
typedef enum tfl_reduce_op {
    TFL_REDUCE_SUM = 0,
    TFL_REDUCE_MEAN,          /* sum / size (floating dtypes only) */
    TFL_REDUCE_WEIGHTED_MEAN, /* sum_r(w_r * t_r) / sum_r(w_r): exact for uneven shards when
                                 w_r is the rank's rows; a rank of weight 0 adds zeros (even
                                 where its tensor holds NaN) */
} tfl_reduce_op;

/**
 * All-reduces tensors in place: each ends holding the reduction over the ranks, identical on
 * every rank. Tensors of one dtype are fused into buckets (list order, dtype by dtype:
 * float32, float64, int32, int64). A NULL entry is skipped and must be NULL on every rank.
 * `weight` is this rank's w for TFL_REDUCE_WEIGHTED_MEAN (>= 0, finite; ignored otherwise);
 * the weights summing to 0 is INVALID_ARGUMENT on every rank.
 * On a GPU (NCCL, see above), float16 and bfloat16 are reduced too.
 * Errors: INVALID_ARGUMENT (a dtype other than those four, MEAN on integers, a non-contiguous
 * or repeated tensor, tensors of two GPUs, naming the index), FAILED_PRECONDITION (GPU
 * tensors without NCCL, or a placement NCCL refuses), MISUSE, UNAVAILABLE (MPI, NCCL).
 */
TFL_API tfl_status tfl_comm_allreduce(tfl_comm *comm, int n, tfl_tensor *const *tensors,
                                      tfl_reduce_op op, double weight);

/**
 * The gradient all-reduce of a data-parallel step: grads[i] (of vars[i], NULL when
 * unconnected) becomes the weighted mean sum_r(w_r g_r) / sum_r(w_r) over the ranks, in a
 * new contiguous tensor owned by the innermost frame (the old one is left to its owner). A
 * NULL gradient counts as zeros of its variable's shape; it stays NULL only when it is NULL
 * on every rank (then the optimizer skips that variable on every rank). One small float64
 * message carries the weights and which gradients are NULL, then the buckets. With one rank
 * the gradients are left as they are.
 * Errors: as tfl_comm_allreduce's; INVALID_ARGUMENT for a gradient whose shape or dtype is
 * not its variable's, or a weight < 0, or weights summing to 0.
 */
TFL_API tfl_status tfl_comm_allreduce_gradients(tfl_comm *comm, int n, tfl_tensor *const *vars,
                                                tfl_tensor **grads, double weight);

/** Sums n doubles across the ranks in place (metrics, counts; exact up to 2^53 for
 * integers). Errors: INVALID_ARGUMENT (n < 0, NULL values with n > 0), UNAVAILABLE. */
TFL_API tfl_status tfl_comm_allreduce_doubles(tfl_comm *comm, double *values, int n);

/** Returns when every rank has called it. Errors: UNAVAILABLE (MPI). */
TFL_API tfl_status tfl_comm_barrier(tfl_comm *comm);

/** Ends the whole job with `code` (MPI_Abort on every rank; exit(code) with one rank): for
 * a program that has reported an error, so that no rank waits forever for one that failed.
 * The library never calls it. */
TFL_API void tfl_comm_abort(tfl_comm *comm, int code);

/**
 * This rank's place on its host: *local_rank is its index among the communicator's ranks that
 * run on the same host (same host name, counted in rank order) and *local_size their count,
 * the numbers Open MPI exports as OMPI_COMM_WORLD_LOCAL_RANK/SIZE, here for any communicator
 * and any launcher. A collective the first time it is called on a communicator (every rank
 * must call it: one int64 message of the ranks' host-name hashes); the answer is kept, later
 * calls are local. One rank: 0 and 1. Either pointer may be NULL.
 * Errors: INVALID_ARGUMENT (NULL comm), MISUSE (freed), RESOURCE_EXHAUSTED, UNAVAILABLE.
 */
TFL_API tfl_status tfl_comm_local_rank(tfl_comm *comm, int *local_rank, int *local_size);

/**
 * The device of a data-parallel rank, one rank per GPU (pure: no communication; what
 * tfl_comm_device decides, testable with any local rank and GPU count). `requested` is what
 * the user asked for (training.device), `local_rank`/`local_size` the rank's place on its host
 * (tfl_comm_local_rank) and `gpus` the GPUs this process sees. Writes the device's name into
 * device (at most size bytes):
 *   - NULL, "" or "auto": "CPU:0" without GPUs; else GPU:(local_rank mod gpus), which needs
 *     local_size <= gpus (FAILED_PRECONDITION otherwise: NCCL drives one GPU per rank);
 *   - "GPU" without an index: as "auto" where there are GPUs; without any, "GPU:0", left to
 *     placement (soft placement runs on the CPU, as without mpirun);
 *   - "GPU:N" (an explicit index): kept when the rank is alone on its host; with several
 *     ranks on the host it is FAILED_PRECONDITION (they would all drive GPU:N: two ranks on
 *     one GPU), naming the device and the ranks, and saying to write "GPU" or "auto";
 *   - "CPU" or "CPU:N": kept ("CPU:N" canonical) for every rank.
 * TensorFlow's spellings ("/device:GPU:1", "/GPU:0", lower case) are accepted.
 * Errors: INVALID_ARGUMENT (not a device name, local_rank outside [0, local_size), gpus < 0,
 * NULL device or size too small for the name), FAILED_PRECONDITION (above).
 */
TFL_API tfl_status tfl_rank_device(tfl_ctx *ctx, const char *requested, int local_rank,
                                   int local_size, int gpus, char *device, size_t size);

/**
 * tfl_rank_device for this rank of comm: its tfl_comm_local_rank (a collective the first
 * time) and the GPUs of comm's context (its devices named "GPU:N"). So under
 * `mpirun -np 4` on a node of 4 GPUs with "auto", rank r drives GPU:r; on a machine without
 * GPUs every rank stays on CPU:0. The same errors, and tfl_comm_local_rank's.
 */
TFL_API tfl_status tfl_comm_device(tfl_comm *comm, const char *requested, char *device,
                                   size_t size);

/** What a communicator has moved so far (tfl_comm_stats; reset with tfl_comm_reset_stats). */
typedef struct tfl_comm_stats {
    int64_t allreduce_calls; /* tfl_comm_allreduce and _gradients with size > 1 */
    int64_t messages;        /* transport messages (buckets, headers) */
    int64_t bytes;           /* bytes all-reduced (each rank's buffer) */
    double seconds;          /* wall time in the all-reduces, packing included */
} tfl_comm_stats;
TFL_API tfl_comm_stats tfl_comm_get_stats(const tfl_comm *comm);
TFL_API void tfl_comm_reset_stats(tfl_comm *comm);

#ifdef __cplusplus
}
#endif

#endif /* TAPEFLOW_COMM_H */
