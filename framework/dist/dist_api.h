/*
 * framework/dist/dist_api.h: what framework/dist declares for the modules above it
 * (layers/data_parallel.c, the data-parallel fit callback) on top of <tapeflow/comm.h>: a
 * communicator's liveness check under the caller's name, and a broadcast of raw bytes through
 * its host transport. The communicator's record stays in dist_internal.h. Public headers only,
 * so that it compiles on any include path. Never installed.
 */
#ifndef TFL_DIST_API_H
#define TFL_DIST_API_H

#include <stdbool.h>
#include <stdint.h>

#include <tapeflow/comm.h>

/** True for a live communicator; MISUSE kept (in its ctx) naming `what` otherwise. */
bool tfl__comm_alive(const tfl_comm *comm, const char *what);
/** Broadcasts `bytes` bytes of buf from rank `root` to every rank through the host transport
 * (every rank calls it with the same bytes and root), without counting it in the statistics
 * (tfl_comm_get_stats). Errors: UNAVAILABLE "<who>: <transport> rank R of N: <message>" when
 * the transport fails. */
tfl_status tfl__comm_broadcast_bytes(tfl_comm *comm, const char *who, void *buf, int64_t bytes,
                                     int root);

#endif /* TFL_DIST_API_H */
