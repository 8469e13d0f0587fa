/*
 * dist/dist_internal.h: the communicator's record, shared by the files of dist/ (comm.c:
 * handles, transports, world; collectives.c: bucketed broadcast and all-reduce;
 * data_parallel.c: the fit callback and the replicas).
 */
#ifndef TFL_DIST_INTERNAL_H
#define TFL_DIST_INTERNAL_H

#include <tapeflow/distributed.h>

#include "internal.h"

struct tfl_comm {
    tfl__ctx_obj obj; /* first: the handle's liveness (handles.c) */
    tfl_ctx *ctx;     /* right after the header, as every handle has it */
    tfl_comm_transport t;
    int64_t bucket_bytes; /* resolved (> 0) */
    void *buf;            /* the fusion buffer, grown on demand */
    size_t buf_bytes;
    tfl_comm_stats stats;
};

/** True for a live communicator; MISUSE kept (in its ctx) naming `what` otherwise. */
bool tfl__comm_alive(const tfl_comm *comm, const char *what);
/** Records UNAVAILABLE "<what>: <transport> rank R of N: <msg>" and returns it. */
tfl_status tfl__comm_fail(tfl_comm *comm, const char *what, const char *msg);
/** Monotonic seconds. */
double tfl__comm_now(void);
/** The fusion buffer with room for bytes (grown; RESOURCE_EXHAUSTED kept on failure). */
void *tfl__comm_buffer(tfl_comm *comm, size_t bytes);

#endif /* TFL_DIST_INTERNAL_H */
