/*
 * framework/dist/dist_internal.h: the communicator's record and the functions shared by the
 * files of framework/dist/ (comm.c: handles, transports, world; collectives.c: bucketed
 * broadcast and all-reduce; nccl.c: the NCCL path). It sits on the core's declared API alone
 * (core_api/module_api.h, native_api.h): framework/dist never sees internal.h. What the
 * modules above use is dist_api.h.
 */
#ifndef TFL_DIST_INTERNAL_H
#define TFL_DIST_INTERNAL_H

#include <tapeflow/comm.h>
#include <tapeflow/version.h>

#include "dist_api.h"
#include "module_api.h"
#include "native_api.h"

typedef struct tfl__nccl tfl__nccl; /* nccl.c: the NCCL communicator of GPU tensors */

struct tfl_comm {
    tfl__ctx_obj obj; /* first: the handle's liveness (handles.c) */
    tfl_ctx *ctx;     /* right after the header, as every handle has it */
    tfl_comm_transport t;
    int64_t bucket_bytes; /* resolved (> 0) */
    void *buf;            /* the fusion buffer, grown on demand */
    size_t buf_bytes;
    tfl_comm_stats stats;
    bool nccl_always; /* opts.gpu_backend "nccl": NCCL even with one rank */
    tfl__nccl *nccl;  /* opened at the first collective on GPU tensors (TFL_HAVE_NCCL) */
    int local_rank, local_size; /* tfl_comm_local_rank's answer, once local_known */
    bool local_known;
};

/* One tensor of a collective: where its data comes from (NULL: zeros) and goes to; numel
 * counts elements of dtype (bytes for a broadcast). */
typedef struct tfl__comm_item {
    const void *src;
    void *dst;
    int64_t numel;
    tfl_dtype dtype;
    bool gpu; /* on the collective's GPU (NCCL), else on the host (the transport) */
} tfl__comm_item;

/** Runs a collective on GPU tensors of dev through NCCL (nccl.c; TFL_HAVE_NCCL only): an
 * all-reduce (root < 0) of sum_r(f_r * src_r) into dst, or a broadcast of bytes from root.
 * Opens the communicator's NCCL at the first call. Ordered after the work issued on dev's
 * stream, and dev's stream after it; the host does not wait. */
tfl_status tfl__nccl_run(tfl_comm *comm, const char *who, tfl__device *dev,
                         const tfl__comm_item *items, int n, double f, int root);
/** Frees the communicator's NCCL state (ncclCommDestroy after its stream drained). */
void tfl__nccl_close(tfl_comm *comm);

/** Records UNAVAILABLE "<what>: <transport> rank R of N: <msg>" and returns it. */
tfl_status tfl__comm_fail(tfl_comm *comm, const char *what, const char *msg);
/** Monotonic seconds. */
double tfl__comm_now(void);
/** The fusion buffer with room for bytes (grown; RESOURCE_EXHAUSTED kept on failure). */
void *tfl__comm_buffer(tfl_comm *comm, size_t bytes);

#endif /* TFL_DIST_INTERNAL_H */
